package otel

import (
	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Option configures an Observer.
type Option func(*config)

type config struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	propagators    propagation.TextMapPropagator
}

// WithTracerProvider sets where the spans go. Defaults to the global
// TracerProvider (otel.GetTracerProvider) as of New.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

// WithMeterProvider sets where the metrics go. Defaults to the global
// MeterProvider (otel.GetMeterProvider) as of New.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meterProvider = mp }
}

// WithPropagators sets how trace context is written into a request's
// params._meta. Defaults to the global TextMapPropagator
// (otel.GetTextMapPropagator) as of New, which propagates nothing until the
// host sets one: set propagation.TraceContext{} (and propagation.Baggage{})
// there or here for the server to continue the trace.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.propagators = p }
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otelapi.GetTracerProvider()
	}
	if c.meterProvider == nil {
		c.meterProvider = otelapi.GetMeterProvider()
	}
	if c.propagators == nil {
		c.propagators = otelapi.GetTextMapPropagator()
	}
	return c
}
