package callgraph

import "github.com/agentreach/reach/internal/jsonscan"

// Field returns the canonical bytes of the top-level member name of the
// canonical JSON object obj, and whether it was present. obj must come from
// Normalize; anything else gives an unspecified (but safe) answer.
func Field(obj []byte, name string) ([]byte, bool) {
	if len(obj) < 2 || obj[0] != '{' {
		return nil, false
	}
	i := 1
	for i < len(obj) && obj[i] == '"' {
		keyEnd := jsonscan.SkipString(obj, i)
		key := obj[i+1 : keyEnd-1]
		valStart := keyEnd + 1 // past ':'
		valEnd := jsonscan.SkipValue(obj, valStart)
		if string(key) == name {
			return obj[valStart:valEnd], true
		}
		i = valEnd + 1 // past ',' or '}'
	}
	return nil, false
}
