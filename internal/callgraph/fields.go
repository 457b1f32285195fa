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
		keyEnd := SkipString(obj, i)
		key := obj[i+1 : keyEnd-1]
		valStart := keyEnd + 1 // past ':'
		valEnd := SkipValue(obj, valStart)
		if string(key) == name {
			return obj[valStart:valEnd], true
		}
		i = valEnd + 1 // past ',' or '}'
	}
	return nil, false
}

// SkipString returns the index just past the JSON string that starts at
// b[i] (its opening quote). b must be valid JSON.
func SkipString(b []byte, i int) int {
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

// SkipValue returns the index just past the canonical JSON value that
// starts at b[i]. b must be canonical (from Normalize).
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
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
