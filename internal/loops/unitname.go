package loops

import "bytes"

// A systemd unit by its bare name (loops21): systemctl reads `nginx` as
// `nginx.service`, so a command that names `nginx.service` names what one
// that names `nginx` does. To the exit-code rule (commandThings), a word
// that ends in ".service" is its name before it: `systemctl status nginx`
// and `systemctl status nginx.service`, failing alike, are one complaint.
// Other units' kinds (nginx.socket, backup.timer) are other things, and
// are read as written.
//
// And the units a systemctl command names after its verb are each a thing,
// by their bare names (fk21): `systemctl start api.service` and
// `systemctl start worker.service` failing alike ("A dependency job for
// the unit failed") are about two units, as `systemctl status nginx` and
// `systemctl status nginx.service` are about one.

// unitStem returns w without a ".service" ending after a name, or w.
func unitStem(w []byte) []byte {
	const s = ".service"
	if len(w) > len(s) && bytes.HasSuffix(w, []byte(s)) {
		return w[:len(w)-len(s)]
	}
	return w
}

// unitWords follows the words of one command: after the word systemctl
// and its verb, each word that is not an option is a unit, until a word
// that starts with neither a letter nor a digit (|, &&, ;, >).
type unitWords struct {
	systemctl, verb bool
}

// unit reports whether word w, the command's next, names a unit.
func (u *unitWords) unit(w []byte) bool {
	switch {
	case len(w) == 0 || w[0] == '-':
		return false
	case !asciiLetter(w[0]) && !isDigit(w[0]):
		*u = unitWords{}
		return false
	case string(w) == "systemctl":
		*u = unitWords{systemctl: true}
		return false
	case u.systemctl && !u.verb:
		u.verb = true
		return false
	}
	return u.verb
}
