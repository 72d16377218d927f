package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// stagingPrefix names the staging directories writeAll creates (and removes).
const stagingPrefix = ".stormwatch-staging-"

// rename is os.Rename; tests make it fail to exercise the rollback.
var rename = os.Rename

// writeAll writes files under dir all at once or not at all. Everything is first written to a
// staging directory on the same file system: beside dir when dir does not exist yet (the
// staged tree is then renamed to dir), inside dir when it does. Before anything under an
// existing dir changes, every target path is checked (no file where a directory must go, no
// directory where a file must go); then each file is renamed into place, and a failure half
// way moves back what was moved and restores what was replaced. On any error the staging
// directory is removed and dir is as it was.
//
// generate owns only the paths it writes: other files under dir, including files an earlier
// run wrote that this one does not, are left alone.
func writeAll(dir string, files []outFile) error {
	seen := map[string]bool{}
	for _, f := range files {
		rel := filepath.FromSlash(f.Path)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("refusing to write %q outside the output directory", f.Path)
		}
		if seen[rel] {
			return fmt.Errorf("%q generated twice", f.Path)
		}
		seen[rel] = true
	}
	for rel := range seen {
		for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
			if seen[d] {
				return fmt.Errorf("%q is generated both as a file and as a directory", filepath.ToSlash(d))
			}
		}
	}
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return writeNew(dir, files)
	case err != nil:
		return err
	case !info.IsDir():
		return fmt.Errorf("output directory %s exists and is not a directory", dir)
	}
	return writeInto(dir, files)
}

// stage writes files under root, creating directories.
func stage(root string, files []outFile) error {
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeNew creates dir with files: staged beside it, then renamed to it. Parent directories it
// had to create are removed again on failure.
func writeNew(dir string, files []outFile) (err error) {
	dir = filepath.Clean(dir)
	created, err := mkdirAll(filepath.Dir(dir))
	defer func() {
		if err != nil {
			removeDirs(created)
		}
	}()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), stagingPrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "out")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	if err := stage(tree, files); err != nil {
		return err
	}
	return rename(tree, dir)
}

// writeInto puts files into the existing directory dir: staged inside it, checked, then moved
// into place one by one with a rollback on failure.
func writeInto(dir string, files []outFile) (err error) {
	tmp, err := os.MkdirTemp(dir, stagingPrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	newRoot, oldRoot := filepath.Join(tmp, "new"), filepath.Join(tmp, "old")
	if err := stage(newRoot, files); err != nil {
		return err
	}
	for _, f := range files {
		if err := checkTarget(dir, filepath.FromSlash(f.Path)); err != nil {
			return err
		}
	}

	// Move into place, remembering how to undo each step.
	var undo []func()
	defer func() {
		if err != nil {
			for _, u := range slices.Backward(undo) {
				u()
			}
		}
	}()
	for _, f := range files {
		rel := filepath.FromSlash(f.Path)
		dst := filepath.Join(dir, rel)
		created, err := mkdirAll(filepath.Dir(dst))
		undo = append(undo, func() { removeDirs(created) })
		if err != nil {
			return err
		}
		if _, err := os.Lstat(dst); err == nil {
			backup := filepath.Join(oldRoot, rel)
			if err := os.MkdirAll(filepath.Dir(backup), 0o755); err != nil {
				return err
			}
			if err := rename(dst, backup); err != nil {
				return err
			}
			undo = append(undo, func() { _ = rename(backup, dst) })
		}
		if err := rename(filepath.Join(newRoot, rel), dst); err != nil {
			return err
		}
		undo = append(undo, func() { _ = os.Remove(dst) })
	}
	return nil
}

// checkTarget reports why rel cannot be written under dir: a file (or anything else but a
// directory) where one of its parent directories must go, or a directory where it must go.
func checkTarget(dir, rel string) error {
	var parents []string
	for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
		parents = append(parents, d)
	}
	for _, d := range slices.Backward(parents) {
		p := filepath.Join(dir, d)
		info, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // created when moving; nothing below it exists
		case err != nil:
			return err
		case !info.IsDir():
			return fmt.Errorf("cannot write %s: %s exists and is not a directory", filepath.Join(dir, rel), p)
		}
	}
	p := filepath.Join(dir, rel)
	if info, err := os.Lstat(p); err == nil && info.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory", p)
	}
	return nil
}

// mkdirAll is os.MkdirAll that returns the directories it created, outermost first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	var created []string
	for _, d := range slices.Backward(missing) {
		err := os.Mkdir(d, 0o755)
		switch {
		case err == nil:
			created = append(created, d)
		case errors.Is(err, fs.ErrExist):
			if info, serr := os.Stat(d); serr != nil || !info.IsDir() {
				return created, err
			}
		default:
			return created, err
		}
	}
	return created, nil
}

// removeDirs removes directories created by mkdirAll, innermost first, if they are empty.
func removeDirs(created []string) {
	for _, d := range slices.Backward(created) {
		_ = os.Remove(d)
	}
}
