package loops

import (
	"testing"
)

// TestWriteRespelledStamped: one write made again in other notations of
// its value, answered alike but for the update time it stamps, is refused
// at the fourth as the same write made again word for word is; the same
// write answered with a count that moves unevenly (stock sold between the
// calls) or with a state that changes is not refused by it.
func TestWriteRespelledStamped(t *testing.T) {
	w := map[string]string{"update_product_variant": "write"}
	prices := []any{"19.90", 19.9, "19.9", "19.900", 19.90}
	stamps := []string{"21:40:03", "21:40:58", "21:43:12", "21:43:30", "21:47:01"}
	play := func(answer func(i int) obj) (int, *Verdict) {
		var calls []asCall
		for i, p := range prices {
			calls = append(calls, asOK("update_product_variant", obj{"id": "gid://shopify/ProductVariant/44102938475", "price": p}, egJSON(answer(i))))
		}
		return thPlay(t, calls, w)
	}
	at, v := play(func(i int) obj {
		return obj{"productVariant": obj{"id": "gid://shopify/ProductVariant/44102938475", "price": "19.90", "updatedAt": "2026-12-05T" + stamps[i] + "Z"}, "userErrors": arr{}}
	})
	if at != 3 || v.Detector != "short_cycle" {
		t.Errorf("a price respelled, answered alike but for its stamp: refused at %d (%v), want 3 by short_cycle", at, v)
	}
	stock := []int{12, 9, 4, 3, 1}
	if at, v := play(func(i int) obj {
		return obj{"productVariant": obj{"id": "gid://shopify/ProductVariant/44102938475", "price": "19.90", "inventoryQuantity": stock[i], "updatedAt": "2026-12-05T" + stamps[i] + "Z"}}
	}); at >= 0 {
		t.Errorf("a price respelled while its stock sells: refused at %d (%v)", at, v)
	}
	states := []string{"draft", "pending", "active", "active", "active"}
	if at, v := play(func(i int) obj {
		return obj{"productVariant": obj{"id": "gid://shopify/ProductVariant/44102938475", "price": "19.90", "status": states[i], "updatedAt": "2026-12-05T" + stamps[i] + "Z"}}
	}); at >= 0 && at < 4 {
		t.Errorf("a price respelled while its state moves: refused at %d (%v), want at 4 or later", at, v)
	}
}
