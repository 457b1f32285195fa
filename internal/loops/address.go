package loops

// An e-mail address named by a complaint (loops21): "SMTP 550 5.1.1
// <chen.wei@north.example>: Recipient address rejected: User unknown"
// names one mailbox, as a path or a quoted value names one file. The same
// complaint about one address, word for word, whatever the arguments that
// asked (the address in another case, in angle brackets, behind a display
// name), is one complaint (same_error through sameThing); a notice sent to
// several people, one of whom bounces, names another address each time.

// namesAddress reports whether msg holds an e-mail address: a word of
// letters, digits, dots, '+', '-' or '_', an '@', then a domain of two
// labels or more, each with a letter or a digit.
func namesAddress(msg []byte) bool {
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
