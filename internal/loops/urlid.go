package loops

// One resource by its id in other addresses (loops21): a video asked as
// https://www.youtube.com/watch?v=Hn2pR7tYw3E, https://youtu.be/Hn2pR7tYw3E,
// m.youtube.com/watch?v=Hn2pR7tYw3E&feature=share or
// youtube.com/embed/Hn2pR7tYw3E is one video: the addresses share nothing
// but the id. A web address that holds exactly one opaque id (eight to 64
// letters, digits, '-' or '_', with a digit, an upper-case and a
// lower-case letter) is, to the rule of reads respelled and answered alike
// (alike.go), that id: the fourth asking of one video under other hosts'
// notations, answered alike, is refused; other videos are other ids, and
// an address with no such id, or with two, is read as it was.

// addressID returns a hash of the one opaque id that web address v holds
// (a scheme, or a host of dotted words before its first slash), or 0.
func addressID(v []byte) uint64 {
	if len(v) < 12 || len(v) > 512 || !webLike(v) {
		return 0
	}
	var id []byte
	for i := 0; i < len(v); {
		if !isTokenByte(v[i]) {
			i++
			continue
		}
		j := i
		digit, upper, lower := false, false, false
		for j < len(v) && isTokenByte(v[j]) {
			c := v[j]
			digit = digit || isDigit(c)
			upper = upper || 'A' <= c && c <= 'Z'
			lower = lower || 'a' <= c && c <= 'z'
			j++
		}
		if n := j - i; n >= 8 && n <= 64 && digit && upper && lower {
			if id != nil {
				return 0 // two ids: read as written
			}
			id = v[i:j]
		}
		i = j
	}
	if id == nil {
		return 0
	}
	return mix(hashBytes(id), 0x75726c6964) | 1
}

// webLike reports whether v is a web address: it starts with http:// or
// https://, or with a host (words joined by dots, one of them at least)
// before its first slash, and holds no space.
func webLike(v []byte) bool {
	for _, c := range v {
		if isSpace(c) {
			return false
		}
	}
	if isWebAddress(v) {
		return true
	}
	dots, letters := 0, false
	for _, c := range v {
		switch {
		case c == '/':
			return dots > 0 && letters
		case c == '.':
			dots++
		case 'a' <= c && c <= 'z':
			letters = true
		case isDigit(c) || c == '-':
		default:
			return false
		}
	}
	return false
}
