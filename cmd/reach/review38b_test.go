package main

import (
	"io"
	"strings"
	"testing"
)

// TestReview38bKeysRevokeNeverEchoesAKeyPasted: reach keys revoke given a
// key as it was pasted from a header or a client's settings ("Bearer
// rk_...", " rk_..." with the space a copy took along) in place of its id
// echoed it whole in its error, which a terminal's scrollback or a CI
// log keeps: only a key given alone was recognised. A key anywhere in
// the argument is told apart and not echoed.
func TestReview38bKeysRevokeNeverEchoesAKeyPasted(t *testing.T) {
	data := t.TempDir()
	var key strings.Builder
	if err := run(t.Context(), []string{"keys", "create", "--principal", "me", "--data", data}, &key, io.Discard); err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(key.String())
	for _, arg := range []string{"Bearer " + secret, " " + secret, "X-Reach-Key: " + secret} {
		err := run(t.Context(), []string{"keys", "revoke", arg, "--data", data}, io.Discard, io.Discard)
		if err == nil || strings.Contains(err.Error(), secret[3:]) || !strings.Contains(err.Error(), "not its id") {
			t.Errorf("keys revoke %q: %v; want it told that is no id, the key not echoed", arg[:8], err)
		}
	}
}
