package retry

import (
	"testing"
	"time"
)

func TestPolicyResolve(t *testing.T) {
	def := Policy{Attempts: 3, Base: 100 * time.Millisecond, Max: 5 * time.Second}
	tests := []struct {
		p    *Policy
		want Policy
	}{
		{nil, def},
		{&Policy{}, def},
		{&Policy{Attempts: 1}, Policy{Attempts: 1, Base: def.Base, Max: def.Max}},
		{&Policy{Attempts: -2, Base: time.Second}, Policy{Attempts: 3, Base: time.Second, Max: def.Max}},
		{&Policy{Max: time.Minute}, Policy{Attempts: 3, Base: def.Base, Max: time.Minute}},
	}
	for _, tt := range tests {
		if got := tt.p.Resolve(); got != tt.want {
			t.Errorf("%+v.Resolve() = %+v, want %+v", tt.p, got, tt.want)
		}
	}
}
