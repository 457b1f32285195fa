package loops

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
func namesAddress(msg []byte) bool {
	for i := range msg {
		if ipv4At(msg, i) {
			return true
		}
	}
	for i, c := range msg {
		if c != '@' || i == 0 || !addressByte(msg[i-1]) {
			continue
		}
		labels, run := 0, 0
		for _, d := range msg[i+1:] {
			switch {
			case addressByte(d) && d != '.' && d != '+':
				run++
				continue
			case d == '.' && run > 0:
				labels++
				run = 0
				continue
			}
			break
		}
		if run > 0 {
			labels++
		}
		if labels >= 2 {
			return true
		}
	}
	return false
}

func addressByte(c byte) bool {
	return isTokenByte(c) || c == '.' || c == '+'
}

// ipv4At reports whether msg holds at i an IPv4 address: four groups of
// one to three digits joined by dots, with no digit or dot before it nor
// after it but a '/' or a ':' (a prefix length, a port).
func ipv4At(msg []byte, i int) bool {
	if i > 0 && (isDigit(msg[i-1]) || msg[i-1] == '.') {
		return false
	}
	j := i
	for g := 0; g < 4; g++ {
		k := j
		for k < len(msg) && isDigit(msg[k]) && k-j < 4 {
			k++
		}
		if k == j || k-j > 3 {
			return false
		}
		j = k
		if g < 3 {
			if j >= len(msg) || msg[j] != '.' {
				return false
			}
			j++
		}
	}
	return j == len(msg) || !isDigit(msg[j]) && msg[j] != '.' || msg[j] == '.' && (j+1 == len(msg) || !isDigit(msg[j+1]))
}
