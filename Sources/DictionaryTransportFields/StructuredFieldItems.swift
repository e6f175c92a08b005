import RawStructuredFieldValues

/// Small builders for swift-http-structured-headers values without parameters (internal).
enum StructuredFieldItems {
    static func item(_ bare: RFC9651BareItem) -> Item {
        Item(bareItem: bare, parameters: OrderedMap<String, RFC9651BareItem>())
    }

    static func innerList(_ items: [Item]) -> InnerList {
        var list = BareInnerList()
        for item in items { list.append(item) }
        return InnerList(bareInnerList: list, parameters: OrderedMap<String, RFC9651BareItem>())
    }
}
