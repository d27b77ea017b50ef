export { datedModel, startFakeProvider } from "./fake-provider";
export type { FakeBehaviour, FakeChatRequest, FakeMode, FakeProvider, FakeProviderOptions, RecordedRequest, RespondContext } from "./fake-provider";
export { sampleFromSchema } from "./json-sample";
export type { FieldRule, SampleContext, SampleOptions } from "./json-sample";
export { strictSchemaProblem } from "./strict-check";
export { SampleDecision } from "./sample-schema";
export { createOracle, loadOracleRecords, promptPapers } from "./oracle";
export type { Oracle, OracleOptions, OracleRecord, OracleStats } from "./oracle";
