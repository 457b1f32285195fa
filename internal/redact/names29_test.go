package redact_test

import (
	"strings"
	"testing"
)

// TestCredentialNames: names that say a credential, as headers and
// arguments spell them, are secret: a key qualified by what it
// authenticates, signs or encrypts or whose account it opens, a JWT, a
// passcode. Names of data keys, and words that only hold "key", are not.
func TestCredentialNames(t *testing.T) {
	r := mustNew(t, nil)
	for _, k := range []string{
		"Ocp-Apim-Subscription-Key", "subscription_key", "subscriptionKey", "X-Auth-Key", "auth_key", "authkey", "AUTH_KEY",
		"x-functions-key", "master_key", "masterKey", "signing_key", "signingKey", "encryption_key", "EncryptionKey",
		"decryption-key", "hmac_key", "HMACKey", "client_key", "clientKey", "consumer_key", "app_key", "appKey",
		"application_key", "account_key", "AccountKey", "service_key", "server_key", "admin_key", "root_key",
		"shared_key", "session_key", "webhook_key", "deploy_key", "storage_key", "license_key", "licence_key",
		"product_key", "ssh_key", "sshKeys", "ssh_keys", "privkey", "priv_key", "integration_key", "developerKey",
		"recovery_key", "sas_key", "crypto_key", "cipher_key", "x-auth-key-id",
		"jwt", "JWT", "id_jwt", "x-goog-iap-jwt-assertion", "userJwt", "passcode", "admin_passcode",
		// already secret, kept so
		"x-goog-api-key", "db-apikey", "client_secret", "aws_secret", "private_key", "session_token", "X-Auth-Token",
		"cookie", "set-cookie", "proxy-authorization", "x-api-key", "secret_key", "access_key_id",
	} {
		if !r.SecretKey(k) {
			t.Errorf("%s is not secret", k)
		}
		if in := `{"` + k + `":"v4lue-0f-it"}`; strings.Contains(string(r.Redact([]byte(in))), "v4lue-0f-it") {
			t.Errorf("%s: JSON %s kept its value", k, r.Redact([]byte(in)))
		}
		if in := k + ": v4lue-0f-it"; strings.Contains(r.RedactString(in), "v4lue-0f-it") {
			t.Errorf("%s: text %q kept its value", k, r.RedactString(in))
		}
	}
	for _, k := range []string{
		"key", "Key", "keys", "keyword", "keywords", "app_keywords", "appKeywords", "client_keyboard", "monkey", "donkey_key",
		"primary_key", "primaryKey", "foreign_key", "sort_key", "partition_key", "hash_key", "range_key", "cache_key",
		"idempotency_key", "Idempotency-Key", "public_key", "publicKey", "issue_key", "issueKey", "project_key",
		"space_key", "object_key", "s3_key", "lookup_key", "map_key", "row_key", "hotkey", "X-Auth-User",
		"X-Auth-Email", "author", "subscription", "subscription_id", "client_id", "account", "app", "service_name",
		"signing_algorithm", "key_name", "sas", "hmac",
	} {
		if r.SecretKey(k) {
			t.Errorf("%s is secret", k)
		}
		if in := `{"` + k + `":"v4lue-0f-it"}`; string(r.Redact([]byte(in))) != in {
			t.Errorf("%s: JSON %s masked", k, r.Redact([]byte(in)))
		}
	}
}

// TestJWTInText: in text, a value under a name whose only secret part is
// "jwt" is masked when it looks like a credential; prose after "jwt:" (an
// error of the JWT checks) stays readable. In JSON every value under it is
// masked.
func TestJWTInText(t *testing.T) {
	r := mustNew(t, nil)
	for in, want := range map[string]string{
		"jwt: reading the JWKS: connection refused":      "jwt: reading the JWKS: connection refused",
		"auth.jwt: the issuer is required":               "auth.jwt: the issuer is required",
		"jwt: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln": "jwt: [REDACTED]",
		`sent jwt="eyJ0eXAi.abc" to it`:                  `sent jwt="[REDACTED]" to it`,
		`note {\"userJwt\": \"eyJ0eXAi.abc\"}`:           `note {\"userJwt\": \"[REDACTED]\"}`,
		"jwt_token: plainword":                           "jwt_token: [REDACTED]",
		"X-Auth-Key: plainword":                          "X-Auth-Key: [REDACTED]",
	} {
		if got := r.RedactString(in); got != want {
			t.Errorf("RedactString(%q) = %q, want %q", in, got, want)
		}
	}
	if got := string(r.Redact([]byte(`{"jwt":"plainword"}`))); got != `{"jwt":"[REDACTED]"}` {
		t.Errorf("JSON under jwt: %s", got)
	}
}
