package loops

// smtpTransient reports whether an error message is a mail server's
// transient negative reply (RFC 5321, 4yz: greylisted, mailbox busy, too
// many connections, "try again later"): a reply code of 4xx after the word
// SMTP, or one beside an enhanced status code of class 4 (451 4.7.1). The
// server asks for the same message later; it is a transient failure, worth
// a retry within the budget, not one complaint said again. A permanent
// reply (5yz) is not one.
func smtpTransient(msg []byte) bool {
	if len(msg) > maxTemplate {
		msg = msg[:maxTemplate]
	}
	for i := 0; i+3 <= len(msg); i++ {
		if msg[i] != '4' || !isDigit(msg[i+1]) || !isDigit(msg[i+2]) || i > 0 && isTokenByte(msg[i-1]) && msg[i-1] != '-' ||
			i+3 < len(msg) && (isTokenByte(msg[i+3]) || msg[i+3] == '.') {
			continue
		}
		if smtpWordBefore(msg[:i]) || enhancedAfter(msg[i+3:]) {
			return true
		}
	}
	return false
}

// smtpWordBefore reports whether b ends with the word SMTP and at most a
// few separators (SMTP 451, SMTP error: 451, smtp-451).
func smtpWordBefore(b []byte) bool {
	k := len(b)
	for k > 0 && len(b)-k < 8 && !isTokenByte(b[k-1]) || k > 0 && b[k-1] == '-' {
		k--
	}
	// "SMTP error (code) 451": one word between.
	for _, skip := range [...]string{"", "error", "code", "reply"} {
		e := k
		if skip != "" {
			if e < len(skip) || !equalFoldASCII(b[e-len(skip):e], skip) {
				continue
			}
			e -= len(skip)
			for e > 0 && len(b)-e < 16 && (b[e-1] == ' ' || b[e-1] == ':') {
				e--
			}
		}
		if e >= 4 && equalFoldASCII(b[e-4:e], "smtp") && (e == 4 || !isTokenByte(b[e-5])) {
			return true
		}
	}
	return false
}

// enhancedAfter reports whether b starts with separators and an enhanced
// mail status code of class 4 (4.7.1, 4.2.2).
func enhancedAfter(b []byte) bool {
	i := 0
	for i < len(b) && i < 3 && (b[i] == ' ' || b[i] == '-') {
		i++
	}
	if i == 0 || i+5 > len(b) || b[i] != '4' || b[i+1] != '.' || !isDigit(b[i+2]) {
		return false
	}
	j := i + 2
	for j < len(b) && isDigit(b[j]) {
		j++
	}
	return j < len(b) && b[j] == '.' && j+1 < len(b) && isDigit(b[j+1])
}

func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
