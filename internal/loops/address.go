package loops

import "bytes"

// An e-mail address named by a complaint (loops21): "SMTP 550 5.1.1
// <chen.wei@north.example>: Recipient address rejected: User unknown"
// names one mailbox, as a path or a quoted value names one file. The same
// complaint about one address, word for word, whatever the arguments that
// asked (the address in another case, in angle brackets, behind a display
// name), is one complaint (same_error through sameThing); a notice sent to
// several people, one of whom bounces, names another address each time.
// So does an IPv4 address, alone or with its prefix length: "firewall
// rule already exists: in tcp 443 from 0.0.0.0/0" names one rule whatever
// spelling of its port (443, "443/tcp", "https") asked for it.

// namesAddress reports whether msg holds an e-mail address (a word of
// letters, digits, dots, '+', '-' or '_', an '@', then a domain of two
// labels or more, each with a letter or a digit) or an IPv4 address.
func namesAddress(msg []byte) bool { return namesAskedAddress(msg, nil) }

// namesAskedAddress reports whether msg holds an address, as namesAddress
// reads them, that the call's arguments args also hold in any case (when
// args is not nil): an address the complaint names but the call did not
// ask about (the client's own, "no pg_hba.conf entry for host
// \"10.0.3.17\"", "Client host [203.0.113.7] blocked") is where the call
// came from, not the thing it asked for, and other calls refused alike
// are each about another thing (fk21).
func namesAskedAddress(msg, args []byte) bool {
	asked := func(a []byte) bool { return args == nil || containsFold(args, a) }
	for i := range msg {
		if j := ipv4At(msg, i); j > 0 && asked(msg[i:j]) {
			return true
		}
	}
	for i, c := range msg {
		if c != '@' || i == 0 || !addressByte(msg[i-1]) {
			continue
		}
		labels, run, end := 0, 0, i+1
		for _, d := range msg[i+1:] {
			switch {
			case addressByte(d) && d != '.' && d != '+':
				run++
				end++
				continue
			case d == '.' && run > 0:
				labels++
				run = 0
				end++
				continue
			}
			break
		}
		if run > 0 {
			labels++
		}
		if labels < 2 {
			continue
		}
		start := i - 1
		for start > 0 && addressByte(msg[start-1]) {
			start--
		}
		if asked(bytes.TrimRight(msg[start:end], ".")) {
			return true
		}
	}
	return false
}

// containsFold reports whether b holds sub, ASCII letters in any case.
func containsFold(b, sub []byte) bool {
	for i := 0; i+len(sub) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func addressByte(c byte) bool {
	return isTokenByte(c) || c == '.' || c == '+'
}

// ipv4At returns the end of the IPv4 address msg holds at i (four groups
// of one to three digits joined by dots, with no digit or dot before it
// nor after it but a '/' or a ':': a prefix length, a port), or 0.
func ipv4At(msg []byte, i int) int {
	if i > 0 && (isDigit(msg[i-1]) || msg[i-1] == '.') {
		return 0
	}
	j := i
	for g := 0; g < 4; g++ {
		k := j
		for k < len(msg) && isDigit(msg[k]) && k-j < 4 {
			k++
		}
		if k == j || k-j > 3 {
			return 0
		}
		j = k
		if g < 3 {
			if j >= len(msg) || msg[j] != '.' {
				return 0
			}
			j++
		}
	}
	if j == len(msg) || !isDigit(msg[j]) && msg[j] != '.' || msg[j] == '.' && (j+1 == len(msg) || !isDigit(msg[j+1])) {
		return j
	}
	return 0
}
