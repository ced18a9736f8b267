-- The W3C trace context (traceparent) of the request that created an
-- invocation, when tracing was on: the worker's spans join that trace
-- across processes, retries and approvals. NULL when tracing was off.
ALTER TABLE action_invocations ADD COLUMN trace_context text;
