package instrument

import (
	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument/breaker"
)

// Breaker returns the circuit breaker called name, creating it with cfg on first use; later
// calls with the same name return the same breaker and ignore cfg. When cfg.Events is nil the
// breaker emits to the registry's hub. Past the cardinality guard, new names share the breaker
// called catalog.OverflowName (created with the cfg of the call that first overflowed). An invalid
// cfg is an error on creation.
//
// Hold on to the returned breaker: the lookup takes a read lock and a map access, which the
// breaker's own call path avoids.
func (r *Registry) Breaker(name string, cfg breaker.Config) (*breaker.Breaker, error) {
	return familyOf[*breaker.Breaker](r, catalog.CircuitBreaker).get(name, func(name string) (*breaker.Breaker, error) {
		if cfg.Events == nil {
			cfg.Events = r.hub
		}
		return breaker.New(name, cfg)
	})
}

// Breakers returns the registry's circuit breakers sorted by name. The slice must not be
// modified.
func (r *Registry) Breakers() []Named[*breaker.Breaker] {
	return familyOf[*breaker.Breaker](r, catalog.CircuitBreaker).all()
}
