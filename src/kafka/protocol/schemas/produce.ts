/**
 * Produce (key 0), versions 0-11, flexible from 9. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * Writes records. This store accepts none; it advertises Produce only because librdkafka will not
 * Fetch from a broker without it (its MSGVER2 feature needs Produce >= 3), and its server answers
 * each partition of a request with an error. The request therefore has to decode, while the record
 * sets stay raw bytes. v3 adds the transactional id; v8 per-record errors; v10 tagged leader hints.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** Produce request table. */
export const PRODUCE_REQUEST = message({
  name: 'ProduceRequest',
  apiKey: 0,
  kind: 'request',
  versions: '0-11',
  flexible: '9+',
  fields: [
    { name: 'transactionalId', type: 'string', versions: '3+', nullable: '3+', default: null },
    { name: 'acks', type: 'int16', versions: '0+' },
    { name: 'timeoutMs', type: 'int32', versions: '0+' },
    {
      name: 'topicData',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        {
          name: 'partitionData',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'index', type: 'int32', versions: '0+' },
            { name: 'records', type: 'records', versions: '0+', nullable: '0+' },
          ],
        },
      ],
    },
  ],
});

/** Produce response table. */
export const PRODUCE_RESPONSE = message({
  name: 'ProduceResponse',
  apiKey: 0,
  kind: 'response',
  versions: '0-11',
  flexible: '9+',
  fields: [
    {
      name: 'responses',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        {
          name: 'partitionResponses',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'index', type: 'int32', versions: '0+' },
            { name: 'errorCode', type: 'int16', versions: '0+' },
            { name: 'baseOffset', type: 'int64', versions: '0+' },
            { name: 'logAppendTimeMs', type: 'int64', versions: '2+', default: -1 },
            { name: 'logStartOffset', type: 'int64', versions: '5+', default: -1 },
            {
              name: 'recordErrors',
              type: '[]struct',
              versions: '8+',
              fields: [
                { name: 'batchIndex', type: 'int32', versions: '8+' },
                {
                  name: 'batchIndexErrorMessage',
                  type: 'string',
                  versions: '8+',
                  nullable: '8+',
                  default: null,
                },
              ],
            },
            { name: 'errorMessage', type: 'string', versions: '8+', nullable: '8+', default: null },
            {
              name: 'currentLeader',
              type: 'struct',
              versions: '10+',
              tag: 0,
              fields: [
                { name: 'leaderId', type: 'int32', versions: '10+', default: -1 },
                { name: 'leaderEpoch', type: 'int32', versions: '10+', default: -1 },
              ],
            },
          ],
        },
      ],
    },
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    {
      name: 'nodeEndpoints',
      type: '[]struct',
      versions: '10+',
      tag: 0,
      fields: [
        { name: 'nodeId', type: 'int32', versions: '10+' },
        { name: 'host', type: 'string', versions: '10+' },
        { name: 'port', type: 'int32', versions: '10+' },
        { name: 'rack', type: 'string', versions: '10+', nullable: '10+', default: null },
      ],
    },
  ],
});

/** A decoded Produce request. */
export type ProduceRequest = MessageValue<typeof PRODUCE_REQUEST>;
/** A decoded Produce response. */
export type ProduceResponse = MessageValue<typeof PRODUCE_RESPONSE>;
/** A Produce response to encode. */
export type ProduceResponseInput = MessageInput<typeof PRODUCE_RESPONSE>;
