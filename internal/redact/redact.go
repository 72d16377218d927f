// Package redact removes what must never reach a log from the strings that name an operation:
// credentials (URL userinfo), query strings and fragments.
package redact

import "strings"

// Endpoint returns s without userinfo, query string or fragment. It accepts any shape — "METHOD
// URL", "METHOD /path", a URL with or without a scheme ("//user:pass@host/a"), "host/path", a
// bare path, several words — and any bytes, valid UTF-8 or not. The result is trimmed, and
// Endpoint(Endpoint(s)) == Endpoint(s).
//
// The rules, applied left to right on words separated by ASCII white space:
//   - The query string or fragment begins at the first '?' or '#': it and everything after it
//     are dropped.
//   - A word's first segment (up to its first '/') and a segment that follows "//" are
//     authorities, where userinfo lives: everything up to the last '@' in them is dropped. An
//     authority is read up to the next '/' or space even past a '?' or '#', so that a password
//     holding one of them is still recognised; when an '@' follows the '?' or '#', the segment
//     could be a password as well as a query, and it is dropped whole.
//   - '@' in other segments of a path ("/users/a@b/orders") is left alone.
func Endpoint(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "@?#") { // the common case: nothing to remove
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c == '/' || isSpace(c) {
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] != '/' && !isSpace(s[j]) {
			j++
		}
		seg := s[i:j]
		q := strings.IndexAny(seg, "?#")
		if authority(b.String()) {
			at := strings.LastIndexByte(seg, '@')
			switch {
			case q >= 0 && at > q: // password or query: drop it, and the rest
				return strings.TrimSpace(b.String())
			case q >= 0:
				b.WriteString(seg[at+1 : q])
				return strings.TrimSpace(b.String())
			}
			seg = seg[at+1:]
		} else if q >= 0 {
			b.WriteString(seg[:q])
			return strings.TrimSpace(b.String())
		}
		b.WriteString(seg)
		i = j
	}
	return strings.TrimSpace(b.String())
}

// authority reports whether the segment that follows out, the text kept so far, is in an
// authority position: at the start of a word, or after "//".
func authority(out string) bool {
	n := len(out)
	return n == 0 || isSpace(out[n-1]) || (n >= 2 && out[n-2] == '/' && out[n-1] == '/')
}

// isSpace reports whether c is ASCII white space.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
