package refusals

import "github.com/agentreach/reach/internal/fault"

// Types maps a type constant's name, as Site.Type spells it, to its value.
var Types = map[string]string{
	"TypeNotFound": fault.TypeNotFound, "TypeInvalidArgs": fault.TypeInvalidArgs, "TypeCycle": fault.TypeCycle,
	"TypeReentrancy": fault.TypeReentrancy, "TypeLoop": fault.TypeLoop, "TypeBudget": fault.TypeBudget,
	"TypeStopped": fault.TypeStopped, "TypePermission": fault.TypePermission, "TypeApproval": fault.TypeApproval,
	"TypeRateLimit": fault.TypeRateLimit, "TypeState": fault.TypeState, "TypeTransient": fault.TypeTransient,
	"TypeUnavailable": fault.TypeUnavailable, "TypeInterrupted": fault.TypeInterrupted, "TypeTool": fault.TypeTool,
}

// Codes returns each code Read finds once, with its type's value (the
// first site's; "" when it is set where the Error is returned).
func Codes(root string) ([]Site, error) {
	sites, _, err := Read(root)
	if err != nil {
		return nil, err
	}
	var out []Site
	for _, s := range sites {
		if len(out) > 0 && out[len(out)-1].Code == s.Code {
			continue
		}
		s.Type = Types[s.Type]
		out = append(out, s)
	}
	return out, nil
}
