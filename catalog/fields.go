package catalog

// Field names of a retry event, shared by the retry log (retrylog) and the trace events
// (collector/otelx), so that a log line and a span event of one decision read the same; the
// primitive's name, state, cause and the like use the label names above (LabelName, …).
const (
	FieldAttempt     = "attempt"      // the attempt that just finished, 1-based
	FieldOutcome     = "outcome"      // the decision: an Outcome value
	FieldDelaySource = "delay_source" // what set the delay before the next attempt: a DelaySource value
)
