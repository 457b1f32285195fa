package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
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

// ToolKey is the key a tool is given for a call of tool under a caller's own
// key, by principal of tenant: "tool:" and a digest of the key with its
// owner (32 hex digits), so that two owners' calls under one key are two keys
// to the tool and the system it writes to (which would otherwise answer one
// owner's call with the other's result), and one owner's retry is the same
// key. It holds no '/', so it never spells a key derived from a request and
// call id ("tool:root/call").
func ToolKey(principal, tenant, tool, key string) string {
	lead, p, t := Owner(principal, tenant)
	return ScopedToolKey(tool, lead+p+"\x00"+t+"\x00"+tool+":"+key)
}

// ScopedToolKey is ToolKey of a key already scoped to its owner, as a
// call's record key is (the owner, then "tool:key"): the runtime has it
// made, and its digest costs only the key's string.
func ScopedToolKey(tool, scoped string) string {
	var buf [256]byte // on the stack: []byte(scoped) past 32 bytes would be an allocation
	sum := sha256.Sum256(append(buf[:0], scoped...))
	var h [32]byte
	hex.Encode(h[:], sum[:16])
	return tool + ":" + string(h[:])
}
