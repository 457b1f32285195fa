package main

import (
	"fmt"
	"testing"

	"github.com/agentreach/reach/internal/pgtest"
)

// The kill tests of the crash points that only SQLite's were killed at
// (docs/STATE.md, "Kill tests, point by point and store by store"), over
// PostgreSQL: one instance, restarted under its name, whose killed life is
// recovered once its heartbeat is instance_ttl (5s, storeHead) old. Each is the
// SQLite test's case with the store in a database of its own; each checks
// what that test checks, through the API and the CLI, once the killed
// life is recovered.

// TestKill30SessionPointsOnPostgres kills at an MCP session's record
// (session.storing, session.stored: TestKill23SessionBeforeAnswer) and
// its end (session.deleted: TestCrashAtSessionDeleted).
func TestKill30SessionPointsOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	for n, point := range []string{"session.storing", "session.stored", "session.deleted"} {
		t.Run(point, func(t *testing.T) {
			url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("session", n))
			if err != nil {
				t.Fatal(err)
			}
			if point == "session.deleted" {
				crashAtSessionDeleted(t, url)
				return
			}
			killSessionBeforeAnswer(t, url, point)
		})
	}
}

// TestKill30TaskStoredOnPostgres is TestCrashAtTaskStored: an A2A task's
// first and second stored views.
func TestKill30TaskStoredOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	for n, point := range []string{"task.stored#1", "task.stored#2"} {
		t.Run(fmt.Sprint("task.stored_", n+1), func(t *testing.T) {
			url, err := pg.CreateDatabase(t.Context(), fmt.Sprint("task", n))
			if err != nil {
				t.Fatal(err)
			}
			killAtTaskStored(t, url, point)
		})
	}
}

// TestKill30CutOffNotedOnPostgres is TestKill21CutOffPoints' cutoff.noted.
func TestKill30CutOffNotedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	url, err := pgtest.Own(t).CreateDatabase(t.Context(), "cutoff")
	if err != nil {
		t.Fatal(err)
	}
	killAtCutOffNoted(t, url)
}

// TestKill30KeptAsideOnPostgres is TestKill21KeptAside.
func TestKill30KeptAsideOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	url, err := pgtest.Own(t).CreateDatabase(t.Context(), "aside")
	if err != nil {
		t.Fatal(err)
	}
	killAtKeptAside(t, url)
}
