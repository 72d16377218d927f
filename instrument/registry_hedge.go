package instrument

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

// Hedge returns the hedge called name, creating it with cfg on first use; later calls with the
// same name return the same hedge and ignore cfg. Without cfg.Budget, the hedge spends the
// budget of the retry of the same name when the registry has one — so a dependency's retries
// and hedges share one budget — and else a budget of its own. Past the cardinality guard, new
// names share the hedge called catalog.OverflowName. An invalid cfg is an error on creation.
func (r *Registry) Hedge(name string, cfg hedge.Config) (*hedge.Hedge, error) {
	return familyOf[*hedge.Hedge](r, catalog.Hedge).get(name, func(name string) (*hedge.Hedge, error) {
		if cfg.Budget == nil {
			for _, nr := range r.Retries() {
				if nr.Name == name {
					cfg.Budget = nr.Value
				}
			}
		}
		return hedge.New(name, cfg)
	})
}

// Hedges returns the registry's hedges sorted by name. The slice must not be modified.
func (r *Registry) Hedges() []Named[*hedge.Hedge] {
	return familyOf[*hedge.Hedge](r, catalog.Hedge).all()
}
