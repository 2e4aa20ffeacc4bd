/// One value per provider lane, indexed by `Lane`: a fixed array, so adding to a lane's count
/// on an answer's path is an index, not a hash or an allocation.
public struct PerLane<Value> {
    private var values: [Value]

    public init(_ make: (Lane) -> Value) { values = Lane.allCases.map(make) }

    public subscript(lane: Lane) -> Value {
        get { values[lane.rawValue] }
        _modify { yield &values[lane.rawValue] }
    }

    /// Each lane with its value, in lane order.
    public var all: [(lane: Lane, value: Value)] { Lane.allCases.map { ($0, values[$0.rawValue]) } }

    /// The sum of one member over every lane.
    public func sum(_ member: (Value) -> Int) -> Int { values.reduce(0) { $0 + member($1) } }
}

extension PerLane: Sendable where Value: Sendable {}
extension PerLane: Equatable where Value: Equatable {}
