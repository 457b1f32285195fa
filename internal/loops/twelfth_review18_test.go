package loops

import (
	"fmt"
	"testing"
)

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

// TestSameRefLegitClicks: clicks on one ref that are not the one write
// made again, described otherwise each time or not: a pagination's Next
// link, each page another (its rows, its heading), and a carousel's Next
// slide with a screenshot after each click (the page's snapshot the same,
// the photo another). Neither is refused.
func TestSameRefLegitClicks(t *testing.T) {
	w := asRunOf("pages", "browser", false).acc("write", "browser_click")
	for i := 2; i < 9; i++ {
		page := twPW("await page.getByRole('link', { name: 'Next' }).click();", fmt.Sprintf("https://shop.example/orders?page=%d", i), "Orders",
			fmt.Sprintf("- heading \"Orders, page %d\" [ref=e11]\n- link \"Next\" [ref=e30]\n- row \"Order %d\"", i, 100+i))
		w.t("", asOK("browser_click", obj{"element": fmt.Sprintf("Next page link (to page %d)", i), "ref": "e30"}, page))
	}
	if p := playAs(w.run); p.refusedAt >= 0 {
		t.Errorf("a pagination's Next, one ref: refused at %d: %v", p.refusedAt, p.v)
	}
	page := twPW("await page.getByRole('button', { name: 'Next slide' }).click();", "https://shop.example/p/1", "Product",
		"- img \"Product photo\" [ref=e20]\n- button \"Next slide\" [ref=e21]")
	for _, varied := range []bool{false, true} {
		w := asRunOf("carousel", "browser", false).acc("write", "browser_click")
		for i := 2; i < 8; i++ {
			d := "Next slide button"
			if varied {
				d = fmt.Sprintf("Next slide button (to photo %d)", i)
			}
			w.t("", asOK("browser_click", obj{"element": d, "ref": "e21"}, page))
			w.t("", asOK("browser_take_screenshot", obj{}, fmt.Sprintf("[image: photo %d, %d bytes]", i, 40000+i*37)))
		}
		if p := playAs(w.run); p.refusedAt >= 0 {
			t.Errorf("a carousel looked at after each click (descriptions varied: %v): refused at %d: %v", varied, p.refusedAt, p.v)
		}
	}
}
