/**
 * Gives every instance of `holder` the calls `names` of the part `partOf(instance)` returns, as
 * methods that pass the call through unchanged (same arguments, same result, same errors).
 *
 * This is how composition keeps DESIGN.md's flat API: a client offers its schedule calls as its
 * own, and a runner its client's calls, without inheriting from them. The names are listed once,
 * beside the part, and a test checks that the list covers the part's public calls; the holder
 * declares the same names by merging an interface (`interface DefaultRunner extends ClientCalls {}`).
 */
export function passCallsThrough<Holder extends object, Part extends object>(
  holder: { prototype: Holder },
  partOf: (instance: Holder) => Part,
  names: ReadonlyArray<keyof Part & string>,
): void {
  for (const name of names) {
    Object.defineProperty(holder.prototype, name, {
      value: function passedThrough(this: Holder, ...args: unknown[]): unknown {
        const part = partOf(this);
        return (part[name] as (...callArgs: unknown[]) => unknown).apply(part, args);
      },
      writable: true,
      configurable: true,
    });
  }
}
