/** What a call came to, as tests of error codes compare it. */

/** The code of the error `promise` rejects with (its text when it has none), or 'OK'. */
export async function outcomeCode(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
  return 'OK';
}
