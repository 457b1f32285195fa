package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestKeysCreateWarnsOfAMisspeltRole: a key made with a role one typo from
// a role reach gives a meaning to (operator, reviewer) warns that it is not
// that role and how to make the key again: it was made silently, and the
// key's requests to /v1/stats or /metrics were refused 403 with nothing to
// say why. A role of the policies' own, far from those, is made quietly.
func TestKeysCreateWarnsOfAMisspeltRole(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"keys", "create", "--principal", "ops", "--roles", "sales,operater", "--data", dir}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if msg := errOut.String(); !strings.Contains(msg, `role "operater" is not "operator"`) || !strings.Contains(msg, "reach keys revoke key_") || !strings.Contains(msg, "--roles sales,operator") {
		t.Errorf("reach keys create --roles sales,operater printed:\n%s\nwant a warning that operater is not operator, and how to make the key again", msg)
	}
	out.Reset()
	errOut.Reset()
	if err := run(t.Context(), []string{"keys", "create", "--principal", "bob", "--roles", "sales,reviewer", "--data", dir}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errOut.String(), "role") {
		t.Errorf("reach keys create --roles sales,reviewer warned of a role:\n%s", errOut.String())
	}
}
