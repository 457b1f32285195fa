// Package enumtext names the values of a small integer enum, for its
// String, MarshalText and UnmarshalText: the value is its index in a table
// of names.
package enumtext

import "fmt"

// Name returns the name of v, or "unknown" for a value the table does not
// name.
func Name[T ~int32](names []string, v T) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return "unknown"
}

// Parse reads a name of the table; what says what the enum is, for the
// error of a name it does not hold ("unknown breaker state \"x\"").
func Parse[T ~int32](names []string, b []byte, what string) (T, error) {
	for i, n := range names {
		if n == string(b) {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q", what, b)
}
