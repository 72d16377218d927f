package instrument

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/fallback"
)

// Fallback returns the fallback called name, creating it with cfg on first use; later calls with
// the same name return the same fallback and ignore cfg. The registry's event hub replaces
// cfg.Events. The fallback is not generic: pass it to [fallback.Call] with the fallback function
// of each call. Past the cardinality guard, new names share the fallback called catalog.OverflowName
// (created with the cfg of the call that first overflowed). An invalid cfg is an error on
// creation.
func (r *Registry) Fallback(name string, cfg fallback.Config) (*fallback.Fallback, error) {
	return familyOf[*fallback.Fallback](r, catalog.Fallback).get(name, func(name string) (*fallback.Fallback, error) {
		cfg.Events = r.hub
		return fallback.New(name, cfg)
	})
}

// Fallbacks returns the registry's fallbacks sorted by name. The slice must not be modified.
func (r *Registry) Fallbacks() []Named[*fallback.Fallback] {
	return familyOf[*fallback.Fallback](r, catalog.Fallback).all()
}
