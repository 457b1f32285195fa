package idempotency

import (
	"strconv"
	"strings"
)

// Owner returns the parts a key names its owner by (an idempotency
// record's scope, an approval's keys, the request a trace's calls share):
// the principal and tenant as they are; or, when either holds a NUL (a
// JWT's claims may hold any byte), lead "\x00" and both quoted, so that no
// two owners spell the same key with NUL between the parts ("a\x00b" of no
// tenant and "a" of tenant "b\x00"). A principal is never empty, so no
// owner without a NUL begins with one.
func Owner(principal, tenant string) (lead, p, t string) {
	if strings.IndexByte(principal, 0) < 0 && strings.IndexByte(tenant, 0) < 0 {
		return "", principal, tenant
	}
	return "\x00", strconv.Quote(principal), strconv.Quote(tenant)
}
