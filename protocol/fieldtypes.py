"""The field types of the catalogue's messages (SPEC 4.2), apart from the schema so the catalogue can be
built from its checked data without loading the YAML checker."""

#: field type -> (struct code, min, max)
TYPES = {
    "u8": ("B", 0, 0xFF), "u16": ("H", 0, 0xFFFF), "u32": ("I", 0, 0xFFFFFFFF), "u64": ("Q", 0, 0xFFFFFFFFFFFFFFFF),
    "i8": ("b", -0x80, 0x7F), "i16": ("h", -0x8000, 0x7FFF), "i32": ("i", -0x80000000, 0x7FFFFFFF),
}
