//go:build !unix

package main

import "context"

// awakeSysmon does nothing where execve is not: the process runs with the
// runtime's default (a system call after an idle spell wakes sysmon).
func awakeSysmon(context.Context) {}
