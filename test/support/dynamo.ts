/** DynamoDB helpers for integration tests, against the real emulator (shared with benchmarks and chaos). */
export { countRequests, createAggregatesTable } from '../../local/scratch.ts';
