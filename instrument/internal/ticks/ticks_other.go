//go:build !(linux && amd64)

package ticks

func cputicks() int64 { return 0 }

func supported() bool { return false }
