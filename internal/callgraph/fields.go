package callgraph

import "bytes"

// Field returns the canonical bytes of the top-level member name of the
// canonical JSON object obj, and whether it was present. obj must come from
// Normalize; anything else gives an unspecified (but safe) answer.
func Field(obj []byte, name string) ([]byte, bool) {
	if len(obj) < 2 || obj[0] != '{' {
		return nil, false
	}
	i := 1
	for i < len(obj) && obj[i] == '"' {
		keyEnd := skipString(obj, i)
		key := obj[i+1 : keyEnd-1]
		valStart := keyEnd + 1 // past ':'
		valEnd := skipValue(obj, valStart)
		if string(key) == name {
			return obj[valStart:valEnd], true
		}
		i = valEnd + 1 // past ',' or '}'
	}
	return nil, false
}

// skipString returns the index just past the string starting at i.
func skipString(b []byte, i int) int {
	i++
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1
		default:
			i++
		}
	}
	return len(b)
}

// skipValue returns the index just past the canonical value starting at i.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	default:
		j := bytes.IndexAny(b[i:], ",}]")
		if j < 0 {
			return len(b)
		}
		return i + j
	}
}
