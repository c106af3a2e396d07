/**
 * Kafka's rules for topic names (Apache Kafka's `Topic.validate`): 1 to 249 characters of
 * `[a-zA-Z0-9._-]`, and neither `.` nor `..`. A name is checked before anything is created from it;
 * names that differ only by `.` against `_` collide (Kafka's metric names cannot tell them apart), so
 * the catalog refuses the second of two such names.
 */

/** Longest topic name, in characters (Kafka's limit: 249, so that partition folder names fit 255). */
export const TOPIC_NAME_LENGTH_MAX = 249;

const LEGAL = /^[a-zA-Z0-9._-]+$/;

/** Why `name` is not a legal topic name, or null when it is. */
export function topicNameProblem(name: string): string | null {
  if (name.length === 0) return 'a topic name cannot be empty';
  if (name === '.' || name === '..') return `a topic name cannot be '${name}'`;
  if (name.length > TOPIC_NAME_LENGTH_MAX)
    return `a topic name has at most ${TOPIC_NAME_LENGTH_MAX} characters, got ${name.length}`;
  if (!LEGAL.test(name))
    return `topic name ${JSON.stringify(name)} has characters other than ASCII letters, digits, '.', '_' and '-'`;
  return null;
}

/** The form in which two colliding names are equal: `.` read as `_`. */
export function collisionKey(name: string): string {
  return name.replaceAll('.', '_');
}
