package loops

import "testing"

func TestZZDebug(t *testing.T) {
	for _, a := range []string{`{"id":"gid://shopify/ProductVariant/44102938475","price":"19.90"}`, `{"id":"gid://shopify/ProductVariant/44102938475","price":19.9}`, `{"id":"gid://shopify/ProductVariant/44102938475","price":"19.9"}`, `{"id":"gid://shopify/ProductVariant/44102938475","price":"19.900"}`} {
		t.Logf("%x %s", foldArgs("u", []byte(a)), a)
	}
}
