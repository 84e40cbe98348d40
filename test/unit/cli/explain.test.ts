/**
 * The CLI's errors of the broker and DynamoDB (local/cli/common.ts `explain`): what kafkajs
 * gathers of the broker's refusals becomes one line naming each, not a stack trace.
 */
import { KafkaJSAggregateError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { CliError, explain } from '../../../local/cli/common.ts';

describe('explain', () => {
  it("says each of the broker's refusals that kafkajs gathers, with its topic, in one line", () => {
    const refusal = (topic: string) => Object.assign(new Error('Request parameters do not satisfy the configured policy'), { topic });
    const explained = explain(new KafkaJSAggregateError('Topic creation errors', [refusal('commands.g2'), refusal('events.g2')]));
    expect(explained).toBeInstanceOf(CliError);
    expect((explained as CliError).message).toBe(
      'Kafka: Topic creation errors: commands.g2: Request parameters do not satisfy the configured policy; ' +
        'events.g2: Request parameters do not satisfy the configured policy',
    );
    expect((explained as CliError).exitCode).toBe(2);
  });

  it('lets an error that is neither the broker’s nor DynamoDB’s pass', () => {
    const error = new TypeError('a bug');
    expect(explain(error)).toBe(error);
  });
});
