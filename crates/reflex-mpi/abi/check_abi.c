/*
 * check_abi.c -- print every ABI fact of an mpi.h, one per line.
 *
 * check_abi.sh builds this file four times: as C and as C++, against
 * MPICH's mpi.h and against Reflex's, and diffs the outputs.  The list of
 * facts comes from abi_items.py (run on Reflex's header) through the file
 * named by ABI_ITEMS, as calls of the ITEM_* macros defined here.
 *
 * What a line shows:
 *   value  NAME = <integer, or pointer value, or &symbol> size=N [type]
 *   type   NAME size=N align=N [type]
 *   field  T.f offset=N size=N [type]
 *   object NAME size=N [type]          (extern data: value is link-time)
 *   call   F(7) = <integer> size=N [type]
 *   alias  NAME -> <expansion text>
 *   symbol NAME [type]
 * [type] is the C++ mangled type name (typeid), printed only by the C++
 * build; it distinguishes long from long long, struct tags, enum types
 * and function signatures.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#define STR(x)  #x
#define XSTR(x) STR(x)

/* Addresses of the functions in extra_symbols.txt, so that a function
 * pointer constant prints as "&name" rather than as a run-time address. */
struct symbol {
    const char *name;
    uintptr_t addr;
};
static struct symbol symbols[16];
static size_t nsymbols;

static void symbol_add(const char *name, uintptr_t addr)
{
    if (nsymbols < sizeof symbols / sizeof symbols[0]) {
        symbols[nsymbols].name = name;
        symbols[nsymbols].addr = addr;
        nsymbols++;
    }
}

static void print_pointer(uintptr_t value)
{
    size_t i;
    for (i = 0; i < nsymbols; i++) {
        if (symbols[i].addr == value) {
            printf("&%s", symbols[i].name);
            return;
        }
    }
    printf("ptr:%#llx", (unsigned long long)value);
}

#ifdef __cplusplus
#include <type_traits>
#include <typeinfo>

template <class T> static void print_value(T v)
{
    if constexpr (std::is_integral<T>::value || std::is_enum<T>::value)
        printf("%lld", (long long)v);
    else
        print_pointer(reinterpret_cast<uintptr_t>(v));
    printf(" size=%zu %s\n", sizeof(T), typeid(T).name());
}

template <class T> static void print_type()
{
    if constexpr (std::is_function<T>::value)
        printf(" function %s\n", typeid(T).name());
    else
        printf(" size=%zu align=%zu %s\n", sizeof(T), alignof(T), typeid(T).name());
}

#define VALUE_OF(x) print_value(x)
#define TYPE_OF(t)  print_type<t>()
#define MANGLED(x)  printf(" %s\n", typeid(x).name())
#else
/* In C, integers and pointers are told apart with _Generic; both
 * conversions below are valid for either, only one result is used. */
#define IS_INTEGER(x)                                                            \
    _Generic((x), char: 1, signed char: 1, unsigned char: 1, short: 1,           \
             unsigned short: 1, int: 1, unsigned: 1, long: 1, unsigned long: 1,  \
             long long: 1, unsigned long long: 1, default: 0)
#define VALUE_OF(x)                                                              \
    do {                                                                         \
        if (IS_INTEGER(x))                                                       \
            printf("%lld", (long long)(intptr_t)(x));                            \
        else                                                                     \
            print_pointer((uintptr_t)(x));                                       \
        printf(" size=%zu\n", sizeof(x));                                        \
    } while (0)
#define TYPE_OF(t)  printf(" size=%zu align=%zu\n", sizeof(t), _Alignof(t))
#define MANGLED(x)  printf("\n")
#endif

#define ITEM_VALUE(x)                                                            \
    printf("value %s = ", #x);                                                   \
    VALUE_OF(x);
#define ITEM_TYPE(t)                                                             \
    printf("type %s", #t);                                                       \
    TYPE_OF(t);
#define ITEM_FTYPE(t)                                                            \
    printf("ftype %s", #t);                                                      \
    MANGLED(t);
#define ITEM_FIELD(t, f)                                                         \
    printf("field %s.%s offset=%zu size=%zu", #t, #f, offsetof(t, f),            \
           sizeof(((t *)0)->f));                                                 \
    MANGLED(((t *)0)->f);
#define ITEM_OBJECT(x)                                                           \
    printf("object %s size=%zu", #x, sizeof(x));                                 \
    MANGLED(x);
#define ITEM_CALL(f)                                                             \
    printf("call %s(7) = %lld size=%zu", #f, (long long)f(7), sizeof(f(7)));     \
    MANGLED(f(7));
#define ITEM_ALIAS(x) printf("alias %s -> %s\n", #x, XSTR(x));
/* abi_items.py lists the symbols first, so they are known before any
 * value is printed. */
#define ITEM_SYMBOL(s)                                                           \
    symbol_add(#s, (uintptr_t)&s);                                               \
    printf("symbol %s", #s);                                                     \
    MANGLED(s);

int main(void)
{
#include ABI_ITEMS
    return 0;
}
