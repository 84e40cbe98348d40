/** The in-memory adapters hold the ports' contract (test/contract/ports.ts), as the DynamoDB and Kafka ones do. */
import { MemoryCluster } from '../../../functions/adapters/memory/cluster.ts';
import { MemoryHeadsStore } from '../../../functions/adapters/memory/heads-store.ts';
import type { Interleaver } from '../../../functions/adapters/memory/interleave.ts';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog, MemoryTopicLogs } from '../../../functions/adapters/memory/topic-log.ts';
import { GenerationLog } from '../../../functions/core/generation-log.ts';
import { generationName } from '../../../functions/core/generations.ts';
import { portsContract } from '../../contract/ports.ts';

let n = 0;

portsContract('in memory', {
  heads: (hooks) => {
    let hook = hooks?.afterFenceRead;
    // The rebuild's writes wait at their point: the hook runs there once, after the fences were read.
    const io: Interleaver = {
      point: async (op) => {
        if (op === 'heads.putRebuiltAll.write' && hook !== undefined) {
          const run = hook;
          hook = undefined;
          await run();
        }
        return 'ok';
      },
    };
    return Promise.resolve(new MemoryHeadsStore('aggregates', io));
  },
  readModels: () => Promise.resolve(new MemoryReadModels()),
  topic: (partitions) => {
    const cluster = new MemoryCluster();
    cluster.create('t', partitions);
    return Promise.resolve({
      log: new MemoryTopicLog(cluster, 't'),
      commandLog: new MemoryTopicLogs(cluster),
      produce: (messages) => {
        cluster.append('t', messages);
        return Promise.resolve();
      },
      recreate: () => {
        cluster.recreate('t');
        return Promise.resolve();
      },
    });
  },
  generations: (partitions) => {
    const cluster = new MemoryCluster();
    const topics = partitions.map((_, index) => generationName('g', index));
    partitions.forEach((count, index) => cluster.create(topics[index] as string, count));
    return Promise.resolve({
      log: new GenerationLog(topics.map((topic) => new MemoryTopicLog(cluster, topic))),
      topics,
      produce: (index, messages) => {
        cluster.append(topics[index] as string, messages);
        return Promise.resolve();
      },
    });
  },
  addRelease: async (heads, tp, release) => {
    await (heads as MemoryHeadsStore).addRelease(tp, release);
  },
  unique: (prefix) => `${prefix}-${++n}`,
});
