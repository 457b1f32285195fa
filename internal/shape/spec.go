package shape

// Spec says how a tool's results are shaped for the model (R9).
type Spec struct {
	// Fields keeps only these top-level fields (dotted paths reach into
	// objects: "customer.name"). Applied to an object, or to each object of an
	// array. Empty keeps everything.
	Fields []string
	// Flatten turns nested objects into dotted keys ({"a":{"b":1}} ->
	// {"a.b":1}), which models read more reliably than deep JSON.
	Flatten bool
	// MaxBytes truncates larger results with a note; if zero, the runtime's
	// Options.MaxResultBytes.
	MaxBytes int
}
