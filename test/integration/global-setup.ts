/**
 * Integration tests run against the real local stack: start the Kafka broker and the
 * DynamoDB emulator unless they already answer (installing them on first use), create the
 * topology's topics and tables, catch the aggregates table and the read models up with the
 * events topic if the emulator lost them (as `npm start` does), and on teardown stop only what this run started. A
 * stack left running with `npm run stack:up` is reused and kept, so repeated runs start in seconds.
 */
import { createKafka } from '../../functions/adapters/kafka/clients.ts';
import { provision } from '../../local/provision.ts';
import { functions } from '../../functions/topology.ts';
import { aggregatesReadiness, readModelsReadiness } from '../../local/system/readiness.ts';
import { startStack } from '../../local/stack/stack.ts';

const log = (line: string): void => console.log(`[local stack] ${line}`);

export default async function setup(): Promise<() => Promise<void>> {
  const since = Date.now();
  log('checking the Kafka broker and the DynamoDB emulator (starting them if needed; the first run downloads them)');
  const stack = await startStack({ log });
  try {
    const { createdTopics, createdTables } = await provision();
    const kafka = createKafka('kafka-aggregates-test-setup');
    const readiness = await aggregatesReadiness(kafka);
    if (readiness === 'behind' || readiness === 'rebuilding') {
      log(
        `the default aggregates table is ${readiness === 'behind' ? 'behind the events topic (the emulator restarted)' : 'mid-rebuild'}: rebuilding it`,
      );
      const rebuild = (await import('../../functions/compose/rebuild.ts')).composeRebuild();
      try {
        const report = await rebuild.run({});
        log(`rebuild ${'status' in report ? report.status : 'done'}`);
      } finally {
        await rebuild.close();
      }
    }
    if (['behind', 'rebuilding'].includes(await readModelsReadiness(kafka, functions.eventHandler.trigger.consumerGroupId))) {
      log('the default read models are behind the events topic (the emulator restarted): rebuilding them');
      const rebuild = (await import('../../functions/compose/rebuild.ts')).composeRebuild();
      try {
        const report = await rebuild.run({ readModels: true });
        log(`read models rebuild ${'status' in report ? report.status : 'done'}`);
      } finally {
        await rebuild.close();
      }
    }
    log(
      `ready in ${((Date.now() - since) / 1000).toFixed(1)} s: Kafka ${stack.endpoints.kafka}, DynamoDB ${stack.endpoints.dynamodb}` +
        (stack.started.length > 0 ? ` (started ${stack.started.join(', ')}; stopped after the tests)` : ' (reused)') +
        `; created topics [${createdTopics.join(', ')}], tables [${createdTables.join(', ')}]`,
    );
  } catch (error) {
    await stack.stop();
    throw error;
  }
  return async () => {
    if (stack.started.length === 0) return;
    log(`stopping ${stack.started.join(', ')}`);
    await stack.stop();
  };
}
