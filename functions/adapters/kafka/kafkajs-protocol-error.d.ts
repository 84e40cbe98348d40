/** kafkajs's table of Kafka protocol errors (not in its typings): whether its retrier tries each again. */
declare module 'kafkajs/src/protocol/error.js' {
  /** One Kafka error code as kafkajs knows it. */
  export interface KafkaErrorCode {
    readonly type: string;
    readonly code: number;
    readonly retriable: boolean;
    readonly message: string;
  }
  /** Every Kafka error code kafkajs knows. */
  export const errorCodes: readonly KafkaErrorCode[];
}
