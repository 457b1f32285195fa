//go:build cgo

package sqlite

// SQLite's C library keeps statistics of its memory (SQLITE_CONFIG_MEMSTATUS,
// on by default in the library as github.com/mattn/go-sqlite3 builds it):
// every allocation and free then takes a mutex of the whole library, to
// count. The store reads none of them (no sqlite3_memory_used, no heap
// limit), so they are turned off before the library is first used: the
// mutex was 2.8 % of the store's CPU under 64 write callers, once each
// connection's own was gone (driver_cgo.go; docs/BENCHMARKS.md, "write15").
// SQLite's "Recommended Compile-time Options" turn it off too
// (SQLITE_DEFAULT_MEMSTATUS=0). The setting must come before the library
// initializes (its first connection): this package's init runs before any
// of its connections opens; a library already initialized refuses it, and
// keeps counting.

/*
#include <stdint.h>
// As declared in SQLite's sqlite3.h, which github.com/mattn/go-sqlite3
// compiles and links in.
int sqlite3_config(int, ...);
int64_t sqlite3_memory_used(void);
static int reach_memstatus_off(void) { return sqlite3_config(9, 0); } // SQLITE_CONFIG_MEMSTATUS
*/
import "C"

func init() { C.reach_memstatus_off() }

// memoryCounted reports whether the library counts its memory (for the
// tests): with its statistics off, it reports none in use.
func memoryCounted() bool { return C.sqlite3_memory_used() > 0 }
