package loops

import "bytes"

// A systemd unit by its bare name (loops21): systemctl reads `nginx` as
// `nginx.service`, so a command that names `nginx.service` names what one
// that names `nginx` does. To the exit-code rule (commandThings), a word
// that ends in ".service" is its name before it: `systemctl status nginx`
// and `systemctl status nginx.service`, failing alike, are one complaint.
// Other units' kinds (nginx.socket, backup.timer) are other things, and
// are read as written.

// unitStem returns w without a ".service" ending after a name, or w.
func unitStem(w []byte) []byte {
	const s = ".service"
	if len(w) > len(s) && bytes.HasSuffix(w, []byte(s)) {
		return w[:len(w)-len(s)]
	}
	return w
}
