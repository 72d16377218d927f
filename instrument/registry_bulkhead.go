package instrument

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/bulkhead"
)

// Bulkhead returns the bulkhead called name, creating it with cfg on first use; later calls with
// the same name return the same bulkhead and ignore cfg. The registry's event hub replaces
// cfg.Events. Past the cardinality guard, new names share the bulkhead called catalog.OverflowName
// (created with the cfg of the call that first overflowed). An invalid cfg is an error on
// creation.
func (r *Registry) Bulkhead(name string, cfg bulkhead.Config) (*bulkhead.Bulkhead, error) {
	return familyOf[*bulkhead.Bulkhead](r, catalog.Bulkhead).get(name, func(name string) (*bulkhead.Bulkhead, error) {
		cfg.Events = r.hub
		return bulkhead.New(name, cfg)
	})
}

// Bulkheads returns the registry's bulkheads sorted by name. The slice must not be modified.
func (r *Registry) Bulkheads() []Named[*bulkhead.Bulkhead] {
	return familyOf[*bulkhead.Bulkhead](r, catalog.Bulkhead).all()
}
