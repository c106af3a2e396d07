// Not a strategy: no plan.
export default { name: 'not-a-strategy' };
