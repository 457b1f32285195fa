package secrets_test

import (
	"fmt"

	"github.com/agentreach/reach/internal/policy/secrets"
)

func ExampleRedactor() {
	red := secrets.New(nil)
	red.Add("ghp_16C7e42F292c6912E7710c838347Ae178B4a")
	fmt.Println(string(red.Redact([]byte(`{"user":"bob","password":"hunter2","note":"token ghp_16C7e42F292c6912E7710c838347Ae178B4a"}`))))
	fmt.Println(red.RedactString("GET /export?user=bob&api_key=abc123"))
	// Output:
	// {"user":"bob","password":"[redacted]","note":"token [redacted]"}
	// GET /export?user=bob&api_key=[redacted]
}
