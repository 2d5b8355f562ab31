! fortran.f90 -- an MPI program in Fortran 90 (`use mpi`), built with Debian's mpif90.mpich:
! MPICH's Fortran binding (libmpichfort.so.12) on top of Reflex's libmpi.so.12. Checks the
! sentinels and conversions that binding relies on: STATUS_IGNORE, STATUSES_IGNORE, IN_PLACE,
! statuses and Get_count, derived types, communicators, error handlers and error classes.
! Also attributes, whose Fortran calls go through MPICH's internal entry points (MPII_*): the
! predefined ones as values, user keyvals with Fortran copy and delete callbacks (called through
! the binding's proxies), MPI_COMM_DUP_FN, and window attributes. Then a reduction operation and
! a generalized request written in Fortran, through `use mpi` and through `include 'mpif.h'`
! (the subroutine mpif_h_checks at the end).
! Prints "apps fortran rank R of N: ok" on every rank that passed; stops with a message otherwise.
module callbacks
    use mpi
    implicit none
    integer :: deletes = 0
    integer :: queries = 0, frees = 0, cancels = 0
    logical :: cancel_saw_complete = .true.
    integer(kind=MPI_ADDRESS_KIND) :: seen_state = 0
contains
    subroutine copy_plus_one(oldcomm, keyval, extra, val_in, val_out, flag, ierr)
        integer :: oldcomm, keyval, ierr
        integer(kind=MPI_ADDRESS_KIND) :: extra, val_in, val_out
        logical :: flag
        val_out = val_in + 1 + extra
        flag = .true.
        ierr = MPI_SUCCESS
    end subroutine copy_plus_one

    subroutine count_delete(comm, keyval, val, extra, ierr)
        integer :: comm, keyval, ierr
        integer(kind=MPI_ADDRESS_KIND) :: val, extra
        deletes = deletes + 1
        ierr = MPI_SUCCESS
    end subroutine count_delete

    ! inoutvec(i) = the element of larger magnitude, keeping its sign.
    subroutine absmax(invec, inoutvec, len, datatype)
        integer :: len, datatype
        integer :: invec(len), inoutvec(len)
        integer :: i
        do i = 1, len
            if (abs(invec(i)) > abs(inoutvec(i))) inoutvec(i) = invec(i)
        end do
    end subroutine absmax

    ! The generalized request "received" 3 integers from rank 5 with tag 77.
    subroutine greq_query(extra_state, status, ierr)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer :: status(MPI_STATUS_SIZE), ierr
        queries = queries + 1
        seen_state = extra_state
        call MPI_Status_set_elements(status, MPI_INTEGER, 3, ierr)
        call MPI_Status_set_cancelled(status, .false., ierr)
        status(MPI_SOURCE) = 5
        status(MPI_TAG) = 77
        ierr = MPI_SUCCESS
    end subroutine greq_query

    subroutine greq_free(extra_state, ierr)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer :: ierr
        frees = frees + 1
        ierr = MPI_SUCCESS
    end subroutine greq_free

    subroutine greq_cancel(extra_state, complete, ierr)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        logical :: complete
        integer :: ierr
        cancels = cancels + 1
        cancel_saw_complete = complete
        ierr = MPI_SUCCESS
    end subroutine greq_cancel
end module callbacks

program fortran_on_reflex
    use mpi
    use callbacks
    implicit none
    integer :: ierr, rank, size, left, right, i, count, cls, color, sub, subsize
    integer :: status(MPI_STATUS_SIZE), requests(2), row
    double precision :: sums(4), pair(2), maxloc_out(2), matrix(3, 4), got(4)
    integer, allocatable :: ranks(:)
    character(len=16) :: word
    integer :: sendval, recvval, keyval, dupkey, dup1, dup2, win, tag_ub_int
    integer(kind=MPI_ADDRESS_KIND) :: value, extra, winsize
    logical :: found, flag
    double precision :: winbuf(8)
    integer :: op, greq, values(3), best(3)
    integer(kind=MPI_ADDRESS_KIND) :: greq_state

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
    right = mod(rank + 1, size)
    left = mod(rank + size - 1, size)

    ! A ring with a status, then Get_count on it.
    sendval = 100 + rank
    call MPI_Sendrecv(sendval, 1, MPI_INTEGER, right, 7, recvval, 1, MPI_INTEGER, left, 7, &
                      MPI_COMM_WORLD, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, count, ierr)
    call check(recvval == 100 + left .and. status(MPI_SOURCE) == left .and. &
               status(MPI_TAG) == 7 .and. count == 1, 'sendrecv ring with a status')

    ! Nonblocking pair with STATUSES_IGNORE, then a receive with STATUS_IGNORE.
    call MPI_Irecv(recvval, 1, MPI_INTEGER, left, 8, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Isend(sendval, 1, MPI_INTEGER, right, 8, MPI_COMM_WORLD, requests(2), ierr)
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
    call check(ierr == MPI_SUCCESS .and. recvval == 100 + left, 'waitall with STATUSES_IGNORE')
    call MPI_Sendrecv(sendval, 1, MPI_INTEGER, right, 9, recvval, 1, MPI_INTEGER, left, 9, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call check(recvval == 100 + left, 'sendrecv with STATUS_IGNORE')

    ! Allreduce in place.
    do i = 1, 4
        sums(i) = dble(rank * i)
    end do
    call MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(sums(3) == dble(3 * size * (size - 1) / 2), 'allreduce with MPI_IN_PLACE')

    ! Broadcast of characters, MAXLOC on a pair of doubles.
    word = 'unset'
    if (rank == 0) word = 'reflex'
    call MPI_Bcast(word, len(word), MPI_CHARACTER, 0, MPI_COMM_WORLD, ierr)
    call check(word == 'reflex', 'bcast of a character string')
    pair = (/ dble(mod(rank * 5, 3)), dble(rank) /)
    call MPI_Allreduce(pair, maxloc_out, 1, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
    call check(maxloc_out(1) == maxval((/ (dble(mod(i * 5, 3)), i = 0, size - 1) /)), &
               'allreduce MAXLOC value')

    ! Row 2 of a column-major matrix as a strided vector type, to the right neighbour.
    do i = 1, 4
        matrix(:, i) = dble(rank * 10 + i)
    end do
    matrix(2, :) = matrix(2, :) + 0.5d0
    call MPI_Type_vector(4, 1, 3, MPI_DOUBLE_PRECISION, row, ierr)
    call MPI_Type_commit(row, ierr)
    call MPI_Sendrecv(matrix(2, 1), 1, row, right, 10, got, 4, MPI_DOUBLE_PRECISION, left, 10, &
                      MPI_COMM_WORLD, status, ierr)
    call MPI_Get_count(status, MPI_DOUBLE_PRECISION, count, ierr)
    call check(count == 4 .and. all(got == (/ (dble(left * 10 + i) + 0.5d0, i = 1, 4) /)), &
               'strided vector datatype')
    call MPI_Type_free(row, ierr)

    ! Split into even and odd ranks; gather the world ranks of the half.
    color = mod(rank, 2)
    call MPI_Comm_split(MPI_COMM_WORLD, color, rank, sub, ierr)
    call MPI_Comm_size(sub, subsize, ierr)
    allocate (ranks(subsize))
    call MPI_Allgather(rank, 1, MPI_INTEGER, ranks, 1, MPI_INTEGER, sub, ierr)
    call check(all(mod(ranks, 2) == color) .and. subsize == (size + 1 - color) / 2, 'comm_split')
    call MPI_Comm_free(sub, ierr)

    ! Predefined attributes are values in Fortran (MPI-2 and MPI-1 forms).
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, value, found, ierr)
    call check(ierr == MPI_SUCCESS .and. found .and. value >= 32767, 'MPI_TAG_UB attribute')
    call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, tag_ub_int, found, ierr)
    call check(found .and. tag_ub_int == value, 'MPI_TAG_UB through MPI_Attr_get')

    ! A keyval with Fortran callbacks: copied (+1 + extra state) by dup, deleted by free.
    extra = 100
    call MPI_Comm_create_keyval(copy_plus_one, count_delete, keyval, extra, ierr)
    call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, dupkey, extra, ierr)
    call MPI_Comm_dup(MPI_COMM_WORLD, dup1, ierr)
    call MPI_Comm_set_attr(dup1, keyval, int(42, MPI_ADDRESS_KIND), ierr)
    call MPI_Comm_set_attr(dup1, dupkey, int(7, MPI_ADDRESS_KIND), ierr)
    call MPI_Comm_dup(dup1, dup2, ierr)
    call MPI_Comm_get_attr(dup2, keyval, value, found, ierr)
    call check(found .and. value == 143, 'attribute copied by a Fortran callback')
    call MPI_Comm_get_attr(dup2, dupkey, value, found, ierr)
    call check(found .and. value == 7, 'attribute copied by MPI_COMM_DUP_FN')
    call MPI_Comm_free(dup2, ierr)
    call MPI_Comm_delete_attr(dup1, keyval, ierr)
    call check(deletes == 2, 'Fortran delete callback at free and at delete_attr')
    call MPI_Comm_get_attr(dup1, keyval, value, found, ierr)
    call check(.not. found, 'deleted attribute')
    call MPI_Comm_free(dup1, ierr)
    call MPI_Comm_free_keyval(keyval, ierr)
    call MPI_Comm_free_keyval(dupkey, ierr)

    ! Window attributes.
    winsize = 8 * 8
    call MPI_Win_create(winbuf, winsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call MPI_Win_get_attr(win, MPI_WIN_SIZE, value, found, ierr)
    call check(found .and. value == winsize, 'MPI_WIN_SIZE attribute')
    call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, value, found, ierr)
    call check(found .and. value == 8, 'MPI_WIN_DISP_UNIT attribute')
    call MPI_Win_free(win, ierr)

    ! A reduction operation written in Fortran.
    values = (/ rank + 1, -(rank + 1), merge(7, 0, rank == 0) /)
    call MPI_Op_create(absmax, .true., op, ierr)
    call MPI_Allreduce(values, best, 3, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
    call check(all(best == (/ size, -size, 7 /)), 'user-defined operation in Fortran')
    call MPI_Op_free(op, ierr)

    ! A generalized request with Fortran callbacks: query at wait, then free; cancel_fn.
    greq_state = 1234
    call MPI_Grequest_start(greq_query, greq_free, greq_cancel, greq_state, greq, ierr)
    call MPI_Test(greq, flag, status, ierr)
    call check(ierr == MPI_SUCCESS .and. .not. flag .and. queries == 0, &
               'generalized request pending before complete')
    call MPI_Grequest_complete(greq, ierr)
    call MPI_Wait(greq, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, count, ierr)
    call MPI_Test_cancelled(status, flag, ierr)
    call check(queries == 1 .and. frees == 1 .and. seen_state == 1234 .and. count == 3 .and. &
               status(MPI_SOURCE) == 5 .and. status(MPI_TAG) == 77 .and. .not. flag .and. &
               greq == MPI_REQUEST_NULL, 'generalized request: query and free in Fortran')
    call MPI_Grequest_start(greq_query, greq_free, greq_cancel, greq_state, greq, ierr)
    call MPI_Cancel(greq, ierr)
    call check(cancels == 1 .and. .not. cancel_saw_complete, 'generalized request: cancel_fn')
    call MPI_Grequest_complete(greq, ierr)
    call MPI_Wait(greq, MPI_STATUS_IGNORE, ierr)
    call check(queries == 2 .and. frees == 2, 'generalized request: second query and free')
    call mpif_h_checks(rank, size)

    ! Errors returned, with their class.
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    call MPI_Send(sendval, 1, MPI_INTEGER, size + 5, 0, MPI_COMM_WORLD, ierr)
    call MPI_Error_class(ierr, cls, ierr)
    call check(cls == MPI_ERR_RANK, 'MPI_ERR_RANK returned for a bad destination')

    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    write (*, '(a, i0, a, i0, a)') 'apps fortran rank ', rank, ' of ', size, ': ok'
    call MPI_Finalize(ierr)

contains

    subroutine check(ok, what)
        logical, intent(in) :: ok
        character(len=*), intent(in) :: what
        integer :: e
        if (.not. ok) then
            write (*, '(a, i0, a, a)') 'apps fortran rank ', rank, ': FAILED ', what
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine check
end program fortran_on_reflex

! The user-operation and generalized-request paths again, from a unit that includes mpif.h.
subroutine mpif_h_checks(rank, size)
    use callbacks, only : absmax, greq_query, greq_free, greq_cancel, queries, frees
    implicit none
    include 'mpif.h'
    integer, intent(in) :: rank, size
    integer :: ierr, op, greq, count, values(2), best(2), status(MPI_STATUS_SIZE)
    integer(kind=MPI_ADDRESS_KIND) :: state

    values = (/ -(rank + 1), rank /)
    call MPI_Op_create(absmax, .true., op, ierr)
    call MPI_Reduce(values, best, 2, MPI_INTEGER, op, 0, MPI_COMM_WORLD, ierr)
    if (rank == 0 .and. any(best /= (/ -size, size - 1 /))) then
        call fail('mpif.h: user-defined operation (reduce)')
    end if
    call MPI_Op_free(op, ierr)

    state = 99
    call MPI_Grequest_start(greq_query, greq_free, greq_cancel, state, greq, ierr)
    call MPI_Grequest_complete(greq, ierr)
    call MPI_Wait(greq, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, count, ierr)
    if (ierr /= MPI_SUCCESS .or. queries /= 3 .or. frees /= 3 .or. count /= 3 .or. &
        status(MPI_TAG) /= 77) call fail('mpif.h: generalized request')

contains

    subroutine fail(what)
        character(len=*), intent(in) :: what
        integer :: e
        write (*, '(a, i0, a, a)') 'apps fortran rank ', rank, ': FAILED ', what
        call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end subroutine fail
end subroutine mpif_h_checks
