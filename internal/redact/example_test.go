package redact_test

import (
	"fmt"

	"github.com/agentreach/reach/internal/redact"
)

func ExampleRedactor() {
	red, _ := redact.New(&redact.Options{Secrets: []string{"ghp_16C7e42F292c6912E7710c838347Ae178B4a"}})
	fmt.Println(string(red.Redact([]byte(`{"user":"bob","password":"hunter2","note":"token ghp_16C7e42F292c6912E7710c838347Ae178B4a"}`))))
	fmt.Println(red.RedactString("GET /export?user=bob&api_key=abc123"))
	fmt.Println(red.RedactString(`cfg {"password":["hunter2hunter2"]}`))
	fmt.Println(red.Blocks([]string{"Bearer ghp_16C7e42F292c", "6912E7710c838347Ae178B4a"}))
	// Output:
	// {"user":"bob","password":"[REDACTED]","note":"token [REDACTED]"}
	// GET /export?user=bob&api_key=[REDACTED]
	// cfg {"password":"[REDACTED]"}
	// [Bearer [REDACTED] ]
}
