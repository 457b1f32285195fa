package loops

import (
	"path/filepath"
	"testing"
)

func TestProbe(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "loopbench", "traces")
	traces := loadTraces(t, dir)
	only := map[string]*Options{
		"no_progress":  {RepeatMax: -1, RetryBudget: -1, ToolRetryBudget: -1, CyclePeriod: -1, DelegationMax: -1, AmplifyMax: -1},
		"no_progress3": {RepeatMax: -1, RetryBudget: -1, ToolRetryBudget: -1, CyclePeriod: -1, DelegationMax: -1, AmplifyMax: -1, StaleSteps: 2},
		"cycle":        {RepeatMax: -1, RetryBudget: -1, ToolRetryBudget: -1, StaleSteps: -1, DelegationMax: -1, AmplifyMax: -1},
		"toolretry":    {RepeatMax: -1, RetryBudget: -1, CyclePeriod: -1, StaleSteps: -1, DelegationMax: -1, AmplifyMax: -1},
	}
	for name, o := range only {
		for _, tr := range traces {
			sc := judge(tr, replay(New(o), tr))
			if sc.r.flag >= 0 || tr.Label.Loop {
				t.Logf("%-12s %s", name, sc)
			}
		}
	}
}
