package policy

import "testing"

// Parts that hold the bytes a separator would be (a JWT's claims may hold
// any) never spell another principal's key: the listing of one is never
// answered from the cache of the other.
func TestVisKeyUnambiguous(t *testing.T) {
	type in struct {
		p     Principal
		scene string
		tags  []string
	}
	cases := []in{
		{p: Principal{ID: "a\x00b"}},
		{p: Principal{ID: "a", Tenant: "b\x00"}},
		{p: Principal{ID: "a", Roles: []string{"x\x01y"}}},
		{p: Principal{ID: "a", Roles: []string{"x", "y"}}},
		{p: Principal{ID: "a", Roles: []string{"x"}}, tags: []string{"y"}},
		{p: Principal{ID: "a"}, tags: []string{"x", "y"}},
		{p: Principal{ID: "a", Attributes: map[string]string{"k\x02v": ""}}},
		{p: Principal{ID: "a", Attributes: map[string]string{"k": "v"}}},
		{p: Principal{ID: "a", Attributes: map[string]string{"k": "v\x01j\x02w"}}},
		{p: Principal{ID: "a", Attributes: map[string]string{"k": "v", "j": "w"}}},
		{p: Principal{ID: "a"}, scene: "s\x00t"},
		{p: Principal{ID: "a\x00s"}, scene: "t"},
	}
	seen := map[string]int{}
	for i, c := range cases {
		k := visKey(&c.p, c.scene, "tool", "read", c.tags)
		if j, ok := seen[k]; ok {
			t.Errorf("cases %d and %d have one key %q", j, i, k)
		}
		seen[k] = i
		if again := visKey(&c.p, c.scene, "tool", "read", c.tags); again != k {
			t.Errorf("case %d: the key changed from %q to %q", i, k, again)
		}
	}
}
