//go:build !linux

package main

// mapOwnPagesSmall does nothing but on Linux (textpages_linux.go).
func mapOwnPagesSmall() {}
