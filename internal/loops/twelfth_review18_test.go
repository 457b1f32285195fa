package loops

import "testing"

// TestSameRefOtherValues: one control under one ref set to another value
// each time (a dropdown's options tried one by one, a field filled with
// other words), the page answering alike (what the choice starts shows
// later), is another write each time, not one write redescribed: a value
// under a key that names it (value, values, option) is what the write
// writes, letters alone or not, and is kept where the control's
// description is left out. The same value chosen again under other
// descriptions is still the one write made again.
func TestSameRefOtherValues(t *testing.T) {
	page := twPW("await page.getByRole('combobox', { name: 'Shipping method' }).selectOption(option);", "https://shop.example/checkout", "Checkout", twCheckout(""))
	for _, key := range []string{"values", "value", "option"} {
		w := asRunOf("options-"+key, "browser", false).acc("write", "browser_select_option")
		for _, v := range []string{"Standard", "Express", "Overnight", "Pickup", "Economy", "Priority"} {
			var val any = v
			if key == "values" {
				val = arr{v}
			}
			w.t("", asOK("browser_select_option", obj{"element": "Shipping method", "ref": "e17", key: val}, page))
		}
		if p := playAs(w.run); p.refusedAt >= 0 {
			t.Errorf("%s: other options of one dropdown: refused at %d: %v", key, p.refusedAt, p.v)
		}
	}
	w := asRunOf("one-option", "browser", true).acc("write", "browser_select_option")
	for _, d := range []string{"Shipping method", "shipping dropdown", "the shipping method select", "Shipping method combobox", "shipping options", "Shipping"} {
		w.t("", asOK("browser_select_option", obj{"element": d, "ref": "e17", "values": arr{"Express"}}, page))
	}
	if p := playAs(w.run); p.refusedAt != 4 || p.v.Detector != "short_cycle" {
		t.Errorf("one option chosen again, described otherwise: refused at %d (%v), want the fifth", p.refusedAt, p.v)
	}
}
